import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';

/**
 * docs/contract.md is what keyfleet promises; code, tests, benchmarks and docs cite it as
 * `contract §N` or `contract §N.M` (a chain such as `contract §6, §14` or `contract §3 and §8`
 * cites each), and Markdown links to it as `contract.md#sN-M`. Every citation must name a
 * section the contract has, and the forms it replaced (the product specification and the
 * original requirements kept outside the repository) must not come back: a fresh clone has
 * neither, so such a reference points nowhere.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONTRACT_FILE = path.join('docs', 'contract.md');
const CONTRACT_PATH = path.join(ROOT, CONTRACT_FILE);
const SCANNED = ['src', 'console/src', 'test', 'docs', 'bench', 'README.md'];
const SCANNED_EXTENSIONS = new Set(['.ts', '.tsx', '.js', '.mjs', '.cjs', '.md', '.sql', '.yaml', '.yml']);
/** Recorded command outputs: they quote what a command printed when it ran, not a citation. */
const NOT_SCANNED = [path.join('bench', 'results')];

const SECTION = String.raw`§(\d+(?:\.\d+)?)`;
/** `contract §4.6`, with the sections chained to it: `, §14`, ` and §8`, ` or §9`, `–§3`. */
const CITATION = new RegExp(String.raw`\bcontract\s+${SECTION}((?:\s*(?:,|and|or|–|-)\s*§\d+(?:\.\d+)?)*)`, 'g');
const CHAINED_SECTION = new RegExp(SECTION, 'g');
const CONTRACT_LINK = /\bcontract\.md#([A-Za-z0-9_-]+)/g;

/** The forms a reference must no longer take, each with what to write instead. */
const RETIRED_FORMS: { pattern: RegExp; instead: string }[] = [
  { pattern: /\bSPEC\b/g, instead: 'cite the contract: contract §N (docs/contract.md)' },
  { pattern: /\bseed:?\s*[§"“]/gi, instead: 'cite the original requirements: contract §0.N' },
  { pattern: /\bthe seed\b/gi, instead: 'the original requirements (contract §0)' },
];

export interface ContractProblem {
  file: string;
  line: number;
  problem: string;
}

/** The section numbers the contract defines, from its anchors (`<a id="s4-6"></a>` is §4.6). */
export function contractSections(contract: string): Set<string> {
  const sections = new Set<string>();
  for (const [, anchor = ''] of contract.matchAll(/<a id="s(\d+(?:-\d+)?)"><\/a>/g)) sections.add(anchor.replace('-', '.'));
  return sections;
}

/** Every anchor the contract defines, sections and others alike. */
function contractAnchors(contract: string): Set<string> {
  return new Set([...contract.matchAll(/<a id="([^"]+)"><\/a>/g)].map(([, anchor = '']) => anchor));
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

/**
 * The problems of one file's text: citations of sections the contract lacks, links to anchors it
 * lacks, and retired forms. A comment's line breaks (with their `*`, `//` or `#`) are read as
 * spaces, so that a citation wrapped over two lines is still one citation.
 */
export function referenceProblems(file: string, text: string, sections: Set<string>, anchors: Set<string>): ContractProblem[] {
  const problems: ContractProblem[] = [];
  const unwrapped = text.replace(/\n[ \t]*(?:\*(?!\/)|\/\/|#)?[ \t]*/g, (lineBreak) => ' '.repeat(lineBreak.length - 1) + '\n');
  const joined = unwrapped.replace(/\n/g, ' ');
  for (const citation of joined.matchAll(CITATION)) {
    const [, first = '', chain = ''] = citation;
    const cited = [first, ...[...chain.matchAll(CHAINED_SECTION)].map(([, chained = '']) => chained)];
    for (const section of cited) {
      if (!sections.has(section)) problems.push({ file, line: lineOf(text, citation.index), problem: `cites contract §${section}, which docs/contract.md does not have` });
    }
  }
  for (const link of text.matchAll(CONTRACT_LINK)) {
    const [, anchor = ''] = link;
    if (!anchors.has(anchor)) problems.push({ file, line: lineOf(text, link.index), problem: `links contract.md#${anchor}, an anchor docs/contract.md does not have` });
  }
  // The contract itself names the forms it replaced, so that a reader who meets them elsewhere finds it.
  for (const { pattern, instead } of file === CONTRACT_FILE ? [] : RETIRED_FORMS) {
    for (const retired of joined.matchAll(pattern)) {
      problems.push({ file, line: lineOf(text, retired.index), problem: `"${retired[0]}" refers to a document outside the repository: ${instead}` });
    }
  }
  return problems;
}

function scannedFiles(relative: string): string[] {
  const absolute = path.join(ROOT, relative);
  if (NOT_SCANNED.includes(relative)) return [];
  if (statSync(absolute).isFile()) return SCANNED_EXTENSIONS.has(path.extname(relative)) ? [relative] : [];
  return readdirSync(absolute).filter((name) => name !== 'node_modules').flatMap((name) => scannedFiles(path.join(relative, name)));
}

const contract = readFileSync(CONTRACT_PATH, 'utf8');
const sections = contractSections(contract);
const anchors = contractAnchors(contract);

describe('docs/contract.md', () => {
  test('has §0 (the original requirements) and §1–§18, each a heading with its anchor', () => {
    for (let number = 0; number <= 18; number += 1) {
      assert.match(contract, new RegExp(`^## <a id="s${number}"></a>§${number} `, 'm'), `§${number} is missing or has no anchor`);
    }
  });

  test('each subsection anchor sits right before the number it stands for', () => {
    for (const match of contract.matchAll(/<a id="s(\d+)-(\d+)"><\/a>(\*\*)?§(\d+\.\d+)/g)) {
      assert.equal(match[4], `${match[1]}.${match[2]}`, `anchor s${match[1]}-${match[2]} stands before §${match[4]}`);
    }
    const subsectionAnchors = [...contract.matchAll(/<a id="s\d+-\d+"><\/a>/g)].length;
    const numberedSubsections = [...contract.matchAll(/<a id="s\d+-\d+"><\/a>(\*\*)?§\d+\.\d+/g)].length;
    assert.equal(numberedSubsections, subsectionAnchors, 'every subsection anchor is followed by its §N.M');
  });

  test('its own links point at anchors it has', () => {
    const missing = [...contract.matchAll(/\]\(#([^)]+)\)/g)].map(([, anchor = '']) => anchor).filter((anchor) => !anchors.has(anchor));
    assert.deepEqual(missing, []);
  });
});

describe('references to the contract', () => {
  test('the scan finds a citation of a missing section, a broken link and the retired forms', () => {
    const sample = [
      '/** Cursor paging (contract §5.3, §5.99) and the poll (contract §4 and §42). */',
      '// as the seed says (SPEC §4); seed "ACL"',
      ' * see [the reply bodies](contract.md#s4-6) and [nothing](contract.md#s4-77)',
      ' * wrapped over two lines: contract',
      ' * §19.1',
    ].join('\n');
    const found = referenceProblems('sample.ts', sample, sections, anchors).map((problem) => `${problem.line}: ${problem.problem}`);
    assert.deepEqual(found, [
      '1: cites contract §5.99, which docs/contract.md does not have',
      '1: cites contract §42, which docs/contract.md does not have',
      '4: cites contract §19.1, which docs/contract.md does not have',
      '3: links contract.md#s4-77, an anchor docs/contract.md does not have',
      '2: "SPEC" refers to a document outside the repository: cite the contract: contract §N (docs/contract.md)',
      '2: "seed "" refers to a document outside the repository: cite the original requirements: contract §0.N',
      '2: "the seed" refers to a document outside the repository: the original requirements (contract §0)',
    ]);
  });

  test(`every reference in ${SCANNED.join(', ')} names a section docs/contract.md has`, () => {
    const files = SCANNED.flatMap(scannedFiles);
    assert.ok(files.length > 100, `scanned ${files.length} files`);
    const problems = files.flatMap((file) => referenceProblems(file, readFileSync(path.join(ROOT, file), 'utf8'), sections, anchors))
      .filter((problem) => problem.file !== path.join('test', 'docs', 'contract-references.test.ts'));
    assert.deepEqual(problems.map((problem) => `${problem.file}:${problem.line}: ${problem.problem}`), []);
  });
});
