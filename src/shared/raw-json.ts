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
  while (i < text.length && !isWhitespace(text.charCodeAt(i)) && text[i] !== ',' && text[i] !== '}' && text[i] !== ']') i++;
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

/** The JSON value of a text without the whitespace around it, exactly as written. The text must be valid JSON. */
export function valueSource(text: string): string {
  const start = skipWhitespace(text, 0);
  return text.slice(start, endOfValue(text, start));
}

/**
 * The source text of each element of a JSON array text, exactly as written and in order. The
 * text must be valid JSON: run it through JSON.parse first.
 */
export function elementSources(arrayText: string): string[] {
  let i = skipWhitespace(arrayText, 0);
  if (arrayText[i] !== '[') throw new SyntaxError('not a JSON array');
  i = skipWhitespace(arrayText, i + 1);
  const sources: string[] = [];
  while (arrayText[i] !== ']') {
    const end = endOfValue(arrayText, i);
    sources.push(arrayText.slice(i, end));
    i = skipWhitespace(arrayText, end);
    if (arrayText[i] === ',') i = skipWhitespace(arrayText, i + 1);
  }
  return sources;
}

/** A member name as JSON.parse reads it: escapes decoded (`"\u006b"` is `k`). */
function nameAt(text: string, start: number, end: number): string {
  const raw = text.slice(start + 1, end - 1);
  return raw.includes('\\') ? (JSON.parse(text.slice(start, end)) as string) : raw;
}

/** Thrown inside walkNames when a member repeats a name of its object. */
class DuplicateName {
  constructor(readonly path: (string | number)[]) {}
}

/**
 * Walks the value that starts at `start` and returns the index just past it; throws
 * DuplicateName at the first member whose name its object already has, in text order.
 */
function walkNames(text: string, start: number, path: (string | number)[]): number {
  const first = text.charCodeAt(start);
  if (first !== 0x7b && first !== 0x5b) return endOfValue(text, start);
  const names = first === 0x7b ? new Set<string>() : undefined;
  let i = skipWhitespace(text, start + 1);
  // The closing bracket is two code points after the opening one: { 0x7b and } 0x7d, [ 0x5b and ] 0x5d.
  for (let index = 0; text.charCodeAt(i) !== first + 2; index++) {
    let valueStart = i;
    if (names) {
      const nameEnd = endOfString(text, i);
      const name = nameAt(text, i, nameEnd);
      if (names.has(name)) throw new DuplicateName([...path, name]);
      names.add(name);
      path.push(name);
      valueStart = skipWhitespace(text, skipWhitespace(text, nameEnd) + 1);
    } else path.push(index);
    i = skipWhitespace(text, walkNames(text, valueStart, path));
    path.pop();
    if (text[i] === ',') i = skipWhitespace(text, i + 1);
  }
  return i + 1;
}

/**
 * Where the first member is (its path, ending with its name) whose name an earlier member of
 * the same object has, in text order; undefined when no object of the text repeats a name.
 * Names count as JSON.parse reads them (`"k"` and `"\u006b"` are one name). The text must be
 * valid JSON, and its depth bounded (the body parser refuses deeper documents): this recurses.
 */
export function duplicateNamePath(text: string): (string | number)[] | undefined {
  try {
    walkNames(text, skipWhitespace(text, 0), []);
    return undefined;
  } catch (error) {
    if (error instanceof DuplicateName) return error.path;
    throw error;
  }
}

/**
 * JSON text kept exactly as it was sent (free-form values the docs promise back "as sent",
 * contract §16): stored as this text, and written into answers as it is (src/http/json-texts.ts),
 * where parsing and writing it again would turn 1.0 into 1 or a 30-digit integer into a double.
 */
export class JsonText {
  constructor(readonly text: string) {}
}
