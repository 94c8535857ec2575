import { useEffect } from 'preact/hooks';

/**
 * Unsaved changes ask before they are left behind: a link of the console, Back and Forward,
 * Sign out, and the browser leaving the page (reload, close, another address). The router
 * (preact-iso) handles links and history on `window` without looking at `defaultPrevented`,
 * so the guard listens in the capture phase and stops the event before the router sees it.
 */
interface Guard {
  /** What has unsaved changes, for the question ("the OKM's configuration"). */
  what: string;
  /** The address of the page with the changes, to return to when Back is refused. */
  url: string;
}

const guards = new Set<Guard>();

export const hasUnsavedChanges = () => guards.size > 0;

function question(): string {
  const what = [...guards].map((guard) => guard.what).join(' and ');
  return `You have unsaved changes to ${what}. Leave this page and discard them?`;
}

/** True when nothing is unsaved, or the person agrees to discard it. */
export function confirmLeaving(): boolean {
  return !hasUnsavedChanges() || window.confirm(question());
}

function linkOf(event: MouseEvent): HTMLAnchorElement | undefined {
  return event.composedPath().find((target): target is HTMLAnchorElement => target instanceof HTMLAnchorElement && target.href !== '');
}

function onClick(event: MouseEvent) {
  if (!hasUnsavedChanges() || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = linkOf(event);
  // Links that leave no page behind: a new tab, a download, a place on the same page.
  if (!link || link.origin !== location.origin || !/^(_?self)?$/i.test(link.target) || link.hasAttribute('download')) return;
  if ((link.getAttribute('href') ?? '').startsWith('#') || link.pathname + link.search === location.pathname + location.search) return;
  if (confirmLeaving()) return;
  event.preventDefault();
  event.stopPropagation();
}

function onPopState(event: PopStateEvent) {
  if (!hasUnsavedChanges()) return;
  const stay = [...guards][0]!.url;
  if (confirmLeaving()) return;
  // History has already moved: put the page with the changes back on top, and keep the router where it is.
  event.stopImmediatePropagation();
  history.pushState(null, '', stay);
}

function onBeforeUnload(event: BeforeUnloadEvent) {
  if (!hasUnsavedChanges()) return;
  event.preventDefault();
  // Some browsers ask only when returnValue is set, whatever preventDefault says.
  event.returnValue = '';
}

let listening = false;

function listen() {
  if (listening) return;
  listening = true;
  window.addEventListener('click', onClick, true);
  window.addEventListener('popstate', onPopState, true);
  window.addEventListener('beforeunload', onBeforeUnload);
}

/** While `unsaved` is true, leaving the page asks first (see above). */
export function useLeaveGuard(unsaved: boolean, what: string): void {
  useEffect(() => {
    if (!unsaved) return undefined;
    listen();
    const guard = { what, url: location.pathname + location.search };
    guards.add(guard);
    return () => {
      guards.delete(guard);
    };
  }, [unsaved, what]);
}
