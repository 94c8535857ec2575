import { render } from 'preact';
import { App } from './app.tsx';
import { signIn } from './session.ts';
import { tokenFromFragment } from './session-token.ts';
import './styles.css';

// A sign-in URL (keyfleet console) carries the token in the fragment, which never reaches a
// server log; it is taken and wiped from the address bar and the history at once.
const fragmentToken = tokenFromFragment(window.location.hash);
let fragmentRefusal: string | null = null;
if (fragmentToken !== null) {
  fragmentRefusal = signIn(fragmentToken);
  history.replaceState(null, '', window.location.pathname + window.location.search);
}

render(<App fragmentRefusal={fragmentRefusal} />, document.getElementById('app')!);
