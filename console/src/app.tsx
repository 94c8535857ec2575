import { useEffect } from 'preact/hooks';
import { LocationProvider, Route, Router } from 'preact-iso';
import { Layout } from './components/layout.tsx';
import { PAGES } from './pages.ts';
import { BASE, href } from './paths.ts';
import { NotFoundPage } from './pages/not-found.tsx';
import { SignInPage } from './pages/sign-in.tsx';
import { useSession } from './session.ts';

/** `fragmentRefusal`: why the token of a sign-in URL could not be used, for the sign-in page. */
export function App({ fragmentRefusal }: { fragmentRefusal: string | null }) {
  const session = useSession();
  useEffect(() => {
    document.title = session ? 'keyfleet console' : 'Sign in · keyfleet console';
  }, [session]);
  if (!session) return <SignInPage refusal={fragmentRefusal} />;
  return (
    <LocationProvider scope={BASE}>
      <Layout session={session} pages={PAGES}>
        <Router>
          {[
            ...PAGES.map((page) => <Route key={page.path} path={href(page.path)} component={page.component} />),
            <Route key="default" default component={NotFoundPage} />,
          ]}
        </Router>
      </Layout>
    </LocationProvider>
  );
}
