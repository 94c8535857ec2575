import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';

/**
 * The firmware retry policy (contract §15): after `offers` polls in a row answered with the
 * same firmware offer that the OKM did not take, the offer is held back for the next
 * `backoffPolls[round - 1]` polls (doubling past the list's end, at most `maxBackoffPolls`),
 * so that the resolvers after it answer those polls; then it is offered again. `offers: 0`
 * never holds an offer back: strict seed order (contract §0.4).
 */
export interface RetryPolicy {
  offers: number;
  backoffPolls: readonly number[];
  maxBackoffPolls: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { offers: 3, backoffPolls: [1, 2, 4, 8], maxBackoffPolls: 32 };

/** Polls are counted in whole numbers; a wait past this many polls is as good as never. */
const MAX_POLLS = 10_000;

/** The policy as the API and the settings take it; what is left out is the fleet default's. */
export const RETRY_POLICY_SCHEMA = Type.Object(
  {
    offers: Type.Integer({ minimum: 0, maximum: 1000, description: 'offers in a row the OKM did not take before one is held back; 0: never held back (strict seed order)' }),
    backoff_polls: Type.Optional(
      Type.Array(Type.Integer({ minimum: 1, maximum: MAX_POLLS }), {
        minItems: 1,
        maxItems: 32,
        description: 'polls the offer is held back after round 1, 2, …; past the list each round doubles the last',
      }),
    ),
    max_backoff_polls: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_POLLS, description: 'the most polls an offer is held back' })),
  },
  { additionalProperties: false, description: 'firmware retry policy (contract §15)' },
);
export type RetryPolicyWire = Static<typeof RETRY_POLICY_SCHEMA>;

export const retryPolicyFromWire = (wire: RetryPolicyWire): RetryPolicy => ({
  offers: wire.offers,
  backoffPolls: wire.backoff_polls ?? DEFAULT_RETRY_POLICY.backoffPolls,
  maxBackoffPolls: wire.max_backoff_polls ?? DEFAULT_RETRY_POLICY.maxBackoffPolls,
});

export const retryPolicyToWire = (policy: RetryPolicy): Required<RetryPolicyWire> => ({
  offers: policy.offers,
  backoff_polls: [...policy.backoffPolls],
  max_backoff_polls: policy.maxBackoffPolls,
});

/** How many polls an offer is held back after its `round`-th round of offers (1 for the first). */
export function backoffPolls(policy: RetryPolicy, round: number): number {
  const listed = policy.backoffPolls;
  const wait = round <= listed.length ? listed[round - 1]! : listed[listed.length - 1]! * 2 ** (round - listed.length);
  return Math.min(wait, policy.maxBackoffPolls);
}

/**
 * Reads a policy written as JSON (a setting, a CLI option, a stored column): the policy, or
 * what is wrong with it, naming the field.
 */
export function parseRetryPolicy(text: string): RetryPolicy | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { error: 'expected a JSON object such as {"offers": 3, "backoff_polls": [1, 2, 4, 8], "max_backoff_polls": 32}' };
  }
  const [first] = Value.Errors(RETRY_POLICY_SCHEMA, value);
  if (first) {
    const field = first.instancePath.slice(1).replaceAll('/', '.') || 'the policy';
    return { error: `${field}: ${first.keyword === 'boolean' ? 'not a field of the policy' : first.message}` };
  }
  return retryPolicyFromWire(value as RetryPolicyWire);
}
