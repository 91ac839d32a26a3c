// A unified diff (what /_casket/diff answers) drawn two ways: as it is, and
// side by side, old on the left and new on the right, paired hunk by hunk.
import { h } from './dom.js';

function lineClass(line) {
  if (line.startsWith('+++') || line.startsWith('---')) return 'd-file';
  if (line.startsWith('@@')) return 'd-hunk';
  if (line.startsWith('+')) return 'd-add';
  if (line.startsWith('-')) return 'd-del';
  return 'd-ctx';
}

export function unified(text) {
  return h('pre', { class: 'diff diff-unified', tabindex: '0', 'aria-label': 'Unified diff' },
    text.split('\n').map((line) => h('span', { class: lineClass(line) }, `${line}\n`)));
}

/** Rows [left, right] per line: context on both sides, removals and additions paired in order. */
export function pairLines(text) {
  const rows = [];
  let dels = [];
  let adds = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) rows.push({ left: dels[i] ?? null, right: adds[i] ?? null, kind: 'change' });
    dels = [];
    adds = [];
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('Index:') || line.startsWith('====')) continue;
    if (line.startsWith('@@')) {
      flush();
      rows.push({ left: line, right: line, kind: 'hunk' });
    } else if (line.startsWith('-')) dels.push(line.slice(1));
    else if (line.startsWith('+')) adds.push(line.slice(1));
    else if (line.startsWith('\\')) continue;
    else {
      flush();
      if (line !== '') rows.push({ left: line.slice(1), right: line.slice(1), kind: 'context' });
    }
  }
  flush();
  return rows;
}

export function sideBySide(text) {
  const cell = (value, kind, side) => h('td', { class: value === null ? 'd-none' : kind === 'hunk' ? 'd-hunk' : kind === 'change' ? (side === 'left' ? 'd-del' : 'd-add') : 'd-ctx' }, value ?? '');
  return h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Side-by-side diff' },
    h('table', { class: 'diff diff-split' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Older'), h('th', { scope: 'col' }, 'Newer'))),
      h('tbody', {}, pairLines(text).map((r) => h('tr', {}, cell(r.left, r.kind, 'left'), cell(r.right, r.kind, 'right'))))));
}
