/**
 * A deliberately small YAML reader for docker-compose.yml, used because `yaml` is not a direct
 * dependency. It knows block mappings, block sequences of scalars, flow sequences of scalars and
 * quoted or plain scalars, and throws on anything else (anchors, block strings, tabs…) so a later
 * edit of the compose file fails loudly here instead of being misread.
 */
export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue };

interface Line {
  number: number;
  indent: number;
  text: string;
}

export function parseComposeYaml(source: string): YamlValue {
  const lines: Line[] = [];
  source.split('\n').forEach((raw, index) => {
    if (raw.includes('\t')) throw unsupported(index + 1, 'tab character');
    const text = stripComment(raw).trimEnd();
    if (text.trim() === '') return;
    lines.push({ number: index + 1, indent: text.length - text.trimStart().length, text: text.trim() });
  });
  const cursor = { at: 0 };
  const value = parseBlock(lines, cursor, lines[0]?.indent ?? 0);
  const rest = lines[cursor.at];
  if (rest) throw unsupported(rest.number, 'unexpected indentation');
  return value;
}

function parseBlock(lines: Line[], cursor: { at: number }, indent: number): YamlValue {
  const first = lines[cursor.at];
  if (!first) return null;
  return first.text.startsWith('- ') ? parseSequence(lines, cursor, indent) : parseMapping(lines, cursor, indent);
}

function parseSequence(lines: Line[], cursor: { at: number }, indent: number): YamlValue[] {
  const items: YamlValue[] = [];
  for (
    let line = lines[cursor.at];
    line && line.indent === indent && line.text.startsWith('- ');
    line = lines[cursor.at]
  ) {
    const item = line.text.slice(2).trim();
    if (/^[\w-]+:(\s|$)/.test(item)) throw unsupported(line.number, 'mapping inside a sequence');
    items.push(parseScalar(item, line.number));
    cursor.at += 1;
  }
  return items;
}

function parseMapping(lines: Line[], cursor: { at: number }, indent: number): { [key: string]: YamlValue } {
  const map: { [key: string]: YamlValue } = {};
  for (let line = lines[cursor.at]; line && line.indent === indent; line = lines[cursor.at]) {
    const match = /^([\w.-]+):(?:\s+(.*))?$/.exec(line.text);
    if (!match?.[1]) throw unsupported(line.number, `not a "key: value" line: ${line.text}`);
    if (match[1] in map) throw unsupported(line.number, `duplicate key ${match[1]}`);
    cursor.at += 1;
    const next = lines[cursor.at];
    if (match[2] !== undefined) map[match[1]] = parseScalar(match[2], line.number);
    else if (next && next.indent > indent) map[match[1]] = parseBlock(lines, cursor, next.indent);
    // A sequence may sit at the key's own indentation ("key:\n- item"), as YAML allows.
    else if (next && next.indent === indent && next.text.startsWith('- '))
      map[match[1]] = parseSequence(lines, cursor, indent);
    else map[match[1]] = null;
  }
  return map;
}

function parseScalar(text: string, lineNumber: number): YamlValue {
  if (/^[&*!|>]/.test(text)) throw unsupported(lineNumber, `anchor, tag or block string: ${text}`);
  if (text.startsWith('[')) {
    if (!text.endsWith(']')) throw unsupported(lineNumber, 'multi-line flow sequence');
    return splitFlow(text.slice(1, -1), lineNumber).map((item) => parseScalar(item, lineNumber));
  }
  if (text.startsWith('{')) throw unsupported(lineNumber, 'flow mapping');
  if (text.startsWith('"')) return JSON.parse(text) as string;
  if (text.startsWith("'")) {
    if (!text.endsWith("'") || text.length < 2) throw unsupported(lineNumber, 'unterminated string');
    return text.slice(1, -1).replaceAll("''", "'");
  }
  if (text === 'true' || text === 'false') return text === 'true';
  if (text === 'null' || text === '~') return null;
  if (/^-?\d+$/.test(text)) return Number(text);
  return text;
}

function splitFlow(body: string, lineNumber: number): string[] {
  const items: string[] = [];
  let current = '';
  let quote: string | null = null;
  for (let i = 0; i < body.length; i++) {
    const ch = body[i] ?? '';
    if (quote) {
      current += ch;
      if (ch === '\\' && quote === '"') current += body[++i] ?? '';
      else if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      current += ch;
    } else if (ch === ',') {
      items.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (quote) throw unsupported(lineNumber, 'unterminated string in flow sequence');
  if (current.trim() !== '') items.push(current.trim());
  return items;
}

/** Drops a `#` comment that is not inside quotes. */
function stripComment(raw: string): string {
  let quote: string | null = null;
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i];
    if (quote) {
      if (ch === '\\' && quote === '"') i += 1;
      else if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '#' && (i === 0 || /\s/.test(raw[i - 1] ?? ''))) return raw.slice(0, i);
  }
  return raw;
}

function unsupported(lineNumber: number, what: string): Error {
  return new Error(`docker-compose.yml line ${lineNumber}: ${what} (unsupported by test/deploy/compose-yaml.ts)`);
}
