/** An absolute http: or https: URL with a host name, as webhooks and firmware downloads need. */
export function isHttpUrl(url: string): boolean {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  return parsed !== undefined && (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== '';
}
