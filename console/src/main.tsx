import { render } from 'preact';
import { resumePersonSession } from './api/client.ts';
import { App } from './app.tsx';
import { Loading } from './components/states.tsx';
import { currentSession, signIn } from './session.ts';
import { tokenFromFragment } from './session-token.ts';
import { singleSignOnOffered } from './single-sign-on.ts';
import './styles.css';

const root = document.getElementById('app')!;

// A sign-in URL (keyfleet console) carries the token in the fragment, which never reaches a
// server log; it is taken and wiped from the address bar and the history at once.
const fragmentToken = tokenFromFragment(window.location.hash);
let fragmentRefusal: string | null = null;
if (fragmentToken !== null) {
  fragmentRefusal = signIn(fragmentToken);
  history.replaceState(null, '', window.location.pathname + window.location.search);
}

// A token in this tab wins; without one, the browser may hold a person's session cookie, which
// only the server can see. Asked first, so that the sign-in page does not flash before the console.
if (currentSession() === null && fragmentRefusal === null && singleSignOnOffered()) {
  render(
    <main class="sign-in">
      <Loading what="Signing in" />
    </main>,
    root,
  );
  await resumePersonSession();
}

render(<App fragmentRefusal={fragmentRefusal} />, root);
