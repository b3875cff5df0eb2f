/* global document, CSS, Node */
// Small DOM helpers: every text from the API goes in through textContent, never as markup.

export const $ = (id) => document.getElementById(id);

/** An element with text and attributes; children may follow. */
export function el(tag, text, attrs = {}, ...children) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? '' : v);
  node.append(...children);
  return node;
}

export function button(text, attrs = {}) {
  return el('button', text, { type: 'button', ...attrs });
}

const statusLine = () => $('status');

/** The page's live status line (role=status): what an action did, read out by screen readers. */
export function setStatus(text, isError = false) {
  const line = statusLine();
  line.textContent = text;
  line.classList.toggle('error', isError);
}

/** Moves focus to an element that may not take it by itself (a heading, a message). */
export function focusOn(node) {
  if (!node) return;
  if (!node.matches('a, button, input, select, textarea, [tabindex]')) node.setAttribute('tabindex', '-1');
  node.focus();
}

/**
 * Shows an API error in its form: the message in the form's alert region, each field's own
 * messages beside it (aria-invalid and aria-describedby), and focus on the first bad field.
 */
export function showFormError(form, err) {
  clearFormError(form);
  const box = form.querySelector('.form-error');
  box.textContent = err.message;
  let firstBad = null;
  for (const [field, messages] of Object.entries(err.errors ?? {})) {
    const input = form.querySelector(`[name="${CSS.escape(field)}"]`);
    if (!input || input.closest('[hidden]')) {
      box.append(el('span', ` ${field}: ${[].concat(messages).join(' ')}`));
      continue;
    }
    const id = `${input.id}-error`;
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('aria-describedby', id);
    input.insertAdjacentElement('afterend', el('span', [].concat(messages).join(' '), { id, class: 'field-error error' }));
    // The first bad field in the form's order, whatever the order of the answer's fields.
    if (!firstBad || firstBad.compareDocumentPosition(input) & Node.DOCUMENT_POSITION_PRECEDING) firstBad = input;
  }
  focusOn(firstBad ?? box);
}

/**
 * Runs a form's submission: its errors cleared, its submit button disabled while `work` runs, and
 * an API error shown in the form (showFormError).
 */
export async function submitting(form, work) {
  clearFormError(form);
  const submit = form.querySelector('button[type="submit"]');
  submit.disabled = true;
  try {
    await work();
  } catch (err) {
    showFormError(form, err);
  } finally {
    submit.disabled = false;
  }
}

export function clearFormError(form) {
  const box = form.querySelector('.form-error');
  if (box) box.textContent = '';
  for (const node of form.querySelectorAll('.field-error')) node.remove();
  for (const node of form.querySelectorAll('[aria-invalid]')) {
    node.removeAttribute('aria-invalid');
    node.removeAttribute('aria-describedby');
  }
}
