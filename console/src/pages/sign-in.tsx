import { useState } from 'preact/hooks';
import { sessionEndReason, signIn } from '../session.ts';

/**
 * Shown whenever no token is held: after sign-out, and when the API refused the token (expired,
 * revoked), with the reason. A token arrives in a sign-in URL's fragment or is pasted here.
 */
export function SignInPage({ refusal }: { refusal: string | null }) {
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState<string | null>(refusal);
  const ended = sessionEndReason();

  const submit = (event: Event) => {
    event.preventDefault();
    setProblem(signIn(token.trim()));
  };

  return (
    <main class="sign-in" id="main">
      <form class="card sign-in-card" onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">keyfleet console</h1>
        {ended !== null && problem === null && (
          <p class="notice notice-warning" role="alert" data-testid="session-ended">
            {ended}
          </p>
        )}
        <p>
          Open the sign-in URL that <code>keyfleet console</code> prints, or paste a token (from <code>keyfleet token issue</code> or your identity
          provider).
        </p>
        <label for="token">Token</label>
        <textarea
          id="token"
          name="token"
          rows={5}
          spellcheck={false}
          autocomplete="off"
          value={token}
          aria-invalid={problem !== null}
          aria-describedby={problem !== null ? 'token-problem' : undefined}
          onInput={(event) => setToken(event.currentTarget.value)}
        />
        {problem !== null && (
          <p class="field-error" id="token-problem" role="alert">
            {problem}
          </p>
        )}
        <button type="submit" class="primary" disabled={token.trim() === ''}>
          Sign in
        </button>
        <p class="muted small">The token is kept in this browser tab only, until you sign out or close it.</p>
      </form>
    </main>
  );
}
