/**
 * Who made a change, for people to read. The API records it as `kind:id` ("person:7",
 * "token:<jti>"); a person or token the page lists already is named, anyone else is said by kind.
 */
export function actorLabel(recorded: string, names: { people: ReadonlyMap<string, string>; tokens: ReadonlyMap<string, string> }): string {
  const separator = recorded.indexOf(':');
  const kind = separator === -1 ? recorded : recorded.slice(0, separator);
  const id = separator === -1 ? '' : recorded.slice(separator + 1);
  if (kind === 'person') return names.people.get(id) ?? `person ${id}`;
  if (kind === 'token') return names.tokens.get(id) ?? 'an API token';
  if (kind === 'cli') return `the command line (${id})`;
  if (kind === 'system') return 'keyfleet';
  return recorded;
}
