import type { ComponentChildren } from 'preact';
import { ApiError } from '../api/client.ts';

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p class="state state-loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" />
      {what}…
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="state state-empty">{children}</p>;
}

export function ErrorState({ error, retry }: { error: unknown; retry?: () => void }) {
  const message = error instanceof Error ? error.message : String(error);
  const status = error instanceof ApiError && error.status > 0 ? ` (${error.status})` : '';
  return (
    <div class="state state-error" role="alert">
      <p>
        <strong>Could not load{status}:</strong> {message}
      </p>
      {retry && (
        <button type="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}
