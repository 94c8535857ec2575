/**
 * Who made a request (contract §17): a person signed in through the OpenID Provider, an
 * API token, a DLock API key, the command line, or keyfleet itself. Written in the request's
 * log line and recorded with each change.
 */
export interface Actor {
  kind: 'person' | 'token' | 'api_key' | 'cli' | 'system';
  /** Stable: the person's id, the token's jti (or its subject when it has none), the key's id, the OS user. */
  id: string;
  /** For people to read: a person's name or email, a token's name, a key's label. */
  name: string;
}

/** The one-line form an actor is stored in where a column holds text (created_by, ended_by). */
export const actorText = (actor: Actor): string => `${actor.kind}:${actor.id}`;
