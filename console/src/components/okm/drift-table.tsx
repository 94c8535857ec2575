import type { DriftReport, OkmRecord } from '../../api/client.ts';
import { sentOnLastPollNote } from '../../format.ts';
import { correctionWords, nextOfferWords, offerSourceWords, retryPolicyWords, shortTime } from '../../correction-words.ts';
import { rolloutHref } from '../../rollout-paths.ts';
import { resolverValues } from '../../resolver-values.ts';
import { LocalTime } from '../relative-time.tsx';
import { Badge } from '../state-badge.tsx';

/** The verdict column's words for each drift verdict. */
const VERDICT_LABELS = { sent: 'Sent on the last poll', next: 'Will be sent next', later: 'Will be sent later', held_back: 'Held back by the retry policy' } as const;

/**
 * Configured and reported values side by side, one row per resolver in seed order (contract §0.4, the
 * drift report's). What the last poll sent and what the next poll is expected to send are two
 * things: the row sent on the last poll says so (the device reports whether it applied it on
 * its next poll), and the row the next poll will send is highlighted.
 */
export function DriftTable({ okm, drift, pendingMessages }: { okm: OkmRecord; drift: DriftReport; pendingMessages: number }) {
  return (
    <div class="table-wrap">
      <table data-testid="drift-table">
        <caption class="visually-hidden">Configured and reported values by resolver, in the order the poll checks them</caption>
        <thead>
          <tr>
            <th scope="col">Resolver</th>
            <th scope="col">Configured</th>
            <th scope="col">Reported</th>
            <th scope="col">Verdict</th>
          </tr>
        </thead>
        <tbody>
          {drift.resolvers.map((resolver) => {
            const values = resolverValues(resolver.name, okm, pendingMessages);
            const offer = drift.firmware.find((candidate) => candidate.resolver === resolver.name);
            const isNext = resolver.verdict === 'next';
            return (
              <tr key={resolver.name} class={isNext ? 'highlight' : resolver.verdict === 'sent' ? 'sent' : undefined} data-resolver={resolver.name} aria-current={isNext ? 'step' : undefined}>
                <th scope="row">
                  {values.label}
                  <div class="mono small muted">{resolver.name}</div>
                </th>
                <td class="break">
                  {offer ? (
                    <>
                      <span data-testid="offer-source">
                        {offer.rollout !== null ? (
                          <a href={rolloutHref(offer.rollout.id)}>{offerSourceWords(offer)}</a>
                        ) : (
                          offerSourceWords(offer)
                        )}
                      </span>
                      {(offer.source !== 'none' || offer.hold) && (
                        <div class="small muted" data-testid="retry-policy">
                          {retryPolicyWords(offer.retry_policy)}
                        </div>
                      )}
                    </>
                  ) : (
                    values.configured
                  )}
                </td>
                <td class="break mono">{values.reportedTime === undefined ? values.reported : <LocalTime value={values.reportedTime} />}</td>
                <td>
                  {resolver.verdict === 'in_step' ? (
                    <Badge kind="in_step" label="In step" />
                  ) : (
                    <>
                      <Badge kind={resolver.verdict === 'sent' ? 'sent' : 'drifting'} label={VERDICT_LABELS[resolver.verdict]} />
                      <div class="small break" data-testid="correction-words">
                        {correctionWords(resolver.name, resolver.correction)}
                      </div>
                      {offer?.hold && resolver.verdict === 'held_back' && (
                        <div class="small muted" data-testid="next-offer">
                          {nextOfferWords(offer.hold, shortTime)}
                        </div>
                      )}
                    </>
                  )}
                  {resolver.sent_on_last_poll && resolver.verdict !== 'sent' && (
                    <div class="muted small" data-testid="sent-on-last-poll">
                      {sentOnLastPollNote(resolver, okm.stuck?.resolver ?? null)}
                    </div>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
