const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const isWhitespace = (code: number) => code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;

/** Index just past the string that starts (with its quote) at `start`. */
function endOfString(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0) throw new SyntaxError('unterminated string');
    let backslashes = 0;
    for (let j = quote - 1; text.charCodeAt(j) === BACKSLASH; j--) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    i = quote + 1;
  }
}

/** Index just past the JSON value that starts at `start`. */
function endOfValue(text: string, start: number): number {
  const first = text.charCodeAt(start);
  if (first === QUOTE) return endOfString(text, start);
  if (first === 0x7b || first === 0x5b) {
    let depth = 0;
    for (let i = start; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code === QUOTE) i = endOfString(text, i) - 1;
      else if (code === 0x7b || code === 0x5b) depth++;
      else if ((code === 0x7d || code === 0x5d) && --depth === 0) return i + 1;
    }
    throw new SyntaxError('unterminated value');
  }
  let i = start;
  while (i < text.length && !isWhitespace(text.charCodeAt(i)) && text[i] !== ',' && text[i] !== '}') i++;
  return i;
}

function skipWhitespace(text: string, i: number): number {
  while (isWhitespace(text.charCodeAt(i))) i++;
  return i;
}

/**
 * The source text of one member's value in a JSON object text, exactly as written, or
 * undefined when the object has no such member. Like JSON.parse, the last of duplicate names
 * wins and escaped names count (`"user\u005fdata"`). The text must be valid JSON: run it
 * through JSON.parse first.
 */
export function memberSource(objectText: string, name: string): string | undefined {
  let source: string | undefined;
  let i = skipWhitespace(objectText, 0);
  if (objectText[i] !== '{') throw new SyntaxError('not a JSON object');
  i = skipWhitespace(objectText, i + 1);
  while (objectText[i] === '"') {
    const keyEnd = endOfString(objectText, i);
    const key = JSON.parse(objectText.slice(i, keyEnd)) as string;
    const valueStart = skipWhitespace(objectText, skipWhitespace(objectText, keyEnd) + 1);
    const valueEnd = endOfValue(objectText, valueStart);
    if (key === name) source = objectText.slice(valueStart, valueEnd);
    i = skipWhitespace(objectText, valueEnd);
    if (objectText[i] === ',') i = skipWhitespace(objectText, i + 1);
  }
  return source;
}
