/** The part of cluster-key-slot 1.1 (ioredis's own dependency; no bundled types) that the key tags use. */
declare module 'cluster-key-slot' {
  /** The Redis Cluster slot (CRC16 of the key's hash tag, mod 16384) of a key. */
  function calculateSlot(key: string): number;
  export default calculateSlot;
}
