/** A part of the embedded default could not be had; the message says what to set instead. */
export class EmbeddedUnavailableError extends Error {
  override readonly name = 'EmbeddedUnavailableError';
}
