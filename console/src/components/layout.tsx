import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { signOutPerson } from '../api/client.ts';
import type { PageEntry } from '../pages.ts';
import { BASE, href } from '../paths.ts';
import { signOut, type PersonSession, type Session, type TokenSession } from '../session.ts';
import { LocalTime } from './relative-time.tsx';
import { confirmLeaving } from './use-leave-guard.ts';

/** The page frame: navigation to every page this token or person may see, who is signed in, sign-out. */
export function Layout({ session, pages, children }: { session: Session; pages: PageEntry[]; children: ComponentChildren }) {
  const { path } = useLocation();
  const { claims } = session;
  const current = (pagePath: string) =>
    pagePath === '/' ? path === `${BASE}/` || path === BASE : path === href(pagePath) || path.startsWith(`${href(pagePath)}/`);
  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <a class="brand" href={href('/')}>
          keyfleet
        </a>
        <nav aria-label="Console pages">
          <ul>
            {pages.filter((page) => page.nav && mayOpen(page.nav, claims)).map((page) => (
              <li key={page.path}>
                <a href={href(page.path)} aria-current={current(page.path) ? 'page' : undefined}>
                  {page.nav!.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {session.kind === 'person' ? <SignedInPerson session={session} /> : <SignedInToken session={session} />}
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}

/** Whether the navigation offers a page: admins every one; others those that are not admin-only and whose scope they hold. */
const mayOpen = (nav: NonNullable<PageEntry['nav']>, claims: Session['claims']) =>
  claims.isAdmin || (!nav.adminOnly && (nav.scope === undefined || claims.scopes.includes(nav.scope)));

/** A token's customer (or "Operator") and until when it holds; sign-out forgets it. */
function SignedInToken({ session: { claims } }: { session: TokenSession }) {
  return (
    <div class="who">
      <span title={`scopes: ${claims.scopes.join(' ')}`}>{claims.customer ?? (claims.isAdmin ? 'Operator' : claims.subject ?? 'Signed in')}</span>
      {claims.expiresAt !== null && (
        <span class="muted small">
          {' '}
          until <LocalTime value={new Date(claims.expiresAt * 1000).toISOString()} />
        </span>
      )}
      <button type="button" class="link-button" onClick={() => confirmLeaving() && signOut()}>
        Sign out
      </button>
    </div>
  );
}

/**
 * A person signed in by single sign-on: their name, role and customer. Sign-out ends the
 * session on the server, then signs out at the provider too where it offers that.
 */
function SignedInPerson({ session: { person, claims } }: { session: PersonSession }) {
  const [signingOut, setSigningOut] = useState(false);
  const leave = async () => {
    if (!confirmLeaving()) return;
    setSigningOut(true);
    let providerSignOut: string | null = null;
    try {
      providerSignOut = await signOutPerson();
    } catch (failure) {
      signOut(`Signing out did not reach the server (${failure instanceof Error ? failure.message : String(failure)}): your session may still be open. Sign in and sign out again, or close the browser.`);
      return;
    }
    signOut();
    if (providerSignOut !== null) window.location.assign(providerSignOut);
  };
  return (
    <div class="who" data-testid="signed-in-person">
      <span class="who-person">
        <span class="who-name">{person.name}</span>
        <span class="who-role" title={`scopes: ${claims.scopes.join(' ')}`}>
          {person.role ?? 'no role'}
          {person.customer !== null && <> · {person.customer}</>}
        </span>
      </span>
      <button type="button" class="link-button" disabled={signingOut} onClick={() => void leave()}>
        {signingOut ? 'Signing out…' : 'Sign out'}
      </button>
    </div>
  );
}

/** A page's heading and the controls beside it. */
export function PageHeader({ title, children }: { title: ComponentChildren; children?: ComponentChildren }) {
  return (
    <div class="page-header">
      <h1>{title}</h1>
      {children && <div class="page-actions">{children}</div>}
    </div>
  );
}
