import type { AnyComponent } from 'preact';
import { OverviewPage } from './pages/overview.tsx';
import { OkmsPage } from './pages/okms.tsx';
import { OkmDetailPage } from './pages/okm-detail.tsx';
import { AclsPage } from './pages/acls.tsx';
import { AclEditorPage } from './pages/acl-editor.tsx';
import { PendingOkmsPage } from './pages/pending-okms.tsx';
import { FirmwarePage } from './pages/firmware.tsx';
import { LocksPage } from './pages/locks.tsx';
import { RolloutsPage } from './pages/rollouts.tsx';
import { RolloutNewPage } from './pages/rollout-new.tsx';
import { RolloutDetailPage } from './pages/rollout-detail.tsx';
import { RolloutOkmsPage } from './pages/rollout-okms.tsx';
import { EventsPage } from './pages/events.tsx';
import { PeoplePage } from './pages/people.tsx';
import { HistoryPage } from './pages/history.tsx';
import { LockDetailPage } from './pages/lock-detail.tsx';


export interface PageEntry {
  /** Below BASE, in preact-iso's pattern syntax ("/okms/:serial"). */
  path: string;
  component: AnyComponent;
  /** Shown in the navigation when set, in this table's order; `adminOnly` to admins, `scope` to those with it (or admin). */
  nav?: { label: string; adminOnly?: boolean; scope?: string };
}

/** The console's pages: the router and the navigation are both made from this table. */
export const PAGES: PageEntry[] = [
  { path: '/', component: OverviewPage, nav: { label: 'Overview' } },
  { path: '/okms', component: OkmsPage, nav: { label: 'OKMs' } },
  { path: '/okms/:serial', component: OkmDetailPage },
  { path: '/acls', component: AclsPage, nav: { label: 'ACLs' } },
  { path: '/acls/:id', component: AclEditorPage },
  { path: '/pending-okms', component: PendingOkmsPage, nav: { label: 'Pending OKMs', adminOnly: true } },
  { path: '/firmware', component: FirmwarePage, nav: { label: 'Firmware' } },
  { path: '/locks', component: LocksPage, nav: { label: 'Locks' } },
  { path: '/locks/:serial', component: LockDetailPage },
  { path: '/rollouts', component: RolloutsPage, nav: { label: 'Rollouts' } },
  { path: '/rollouts/new', component: RolloutNewPage },
  { path: '/rollouts/:id', component: RolloutDetailPage },
  { path: '/rollouts/:id/okms', component: RolloutOkmsPage },
  { path: '/events', component: EventsPage, nav: { label: 'Events' } },
  { path: '/history', component: HistoryPage, nav: { label: 'History', scope: 'audit:read' } },
  { path: '/people', component: PeoplePage, nav: { label: 'People & access', adminOnly: true } },
];
