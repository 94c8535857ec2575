import { useState } from 'preact/hooks';
import { sessionEndReason, signIn } from '../session.ts';
import { singleSignOnHref, singleSignOnOffered } from '../single-sign-on.ts';

/**
 * Shown whenever nobody is signed in: after sign-out, and when the API refused the token or the
 * session (expired, revoked), with the reason. With single sign-on set up, a person signs in
 * through the company's OpenID Provider and comes back to the page they asked for; a token (a
 * sign-in URL's fragment, or pasted here) stays the way in without it, and the break-glass one.
 */
export function SignInPage({ refusal }: { refusal: string | null }) {
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState<string | null>(refusal);
  const ended = sessionEndReason();
  const singleSignOn = singleSignOnOffered();

  const submit = (event: Event) => {
    event.preventDefault();
    setProblem(signIn(token.trim()));
  };

  return (
    <main class="sign-in" id="main">
      <div class="card sign-in-card">
        <h1 id="sign-in-title">keyfleet console</h1>
        {ended !== null && problem === null && (
          <p class="notice notice-warning" role="alert" data-testid="session-ended">
            {ended}
          </p>
        )}
        {singleSignOn && (
          <section class="sign-in-sso" aria-labelledby="sso-title">
            <h2 id="sso-title" class="visually-hidden">
              Single sign-on
            </h2>
            <a class="button primary sign-in-sso-button" href={singleSignOnHref(window.location.pathname + window.location.search)}>
              Sign in with single sign-on
            </a>
            <p class="muted small">With your company account. What you may see and do comes from the role your administrator gave you or your group.</p>
          </section>
        )}
        <form class="sign-in-token" onSubmit={submit} aria-labelledby={singleSignOn ? 'token-title' : 'sign-in-title'}>
          {singleSignOn && (
            <h2 id="token-title" class="sign-in-or">
              <span>or with a token</span>
            </h2>
          )}
          <p>
            Open the sign-in URL that <code>keyfleet console</code> prints, or paste a token (from <code>keyfleet token issue</code> or your identity
            provider).
          </p>
          <label for="token">Token</label>
          <textarea
            id="token"
            name="token"
            rows={singleSignOn ? 3 : 5}
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
          <button type="submit" class={singleSignOn ? undefined : 'primary'} disabled={token.trim() === ''}>
            Sign in
          </button>
          <p class="muted small">The token is kept in this browser tab only, until you sign out or close it.</p>
        </form>
      </div>
    </main>
  );
}
