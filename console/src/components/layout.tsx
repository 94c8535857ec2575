import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import type { PageEntry } from '../pages.ts';
import { BASE, href } from '../paths.ts';
import { signOut, type Session } from '../session.ts';
import { LocalTime } from './relative-time.tsx';
import { confirmLeaving } from './use-leave-guard.ts';

/** The page frame: navigation to every page this token may see, who is signed in, sign-out. */
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
            {pages.filter((page) => page.nav && (!page.nav.adminOnly || claims.isAdmin)).map((page) => (
              <li key={page.path}>
                <a href={href(page.path)} aria-current={current(page.path) ? 'page' : undefined}>
                  {page.nav!.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
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
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
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
