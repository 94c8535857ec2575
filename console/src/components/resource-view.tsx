import type { ComponentChildren } from 'preact';
import { Empty, ErrorState, Loading } from './states.tsx';
import type { Resource } from './use-resource.ts';

/**
 * A resource's error (with a retry), its first loading, its empty state, or its data: what
 * every panel of the console shows in that order.
 */
export function ResourceView<T>({
  resource,
  isEmpty,
  empty,
  children,
}: {
  resource: Resource<T>;
  isEmpty: (data: T) => boolean;
  empty: ComponentChildren;
  children: (data: T) => ComponentChildren;
}) {
  if (resource.error !== undefined) return <ErrorState error={resource.error} retry={resource.reload} />;
  if (resource.data === undefined) return <Loading />;
  if (isEmpty(resource.data)) return <Empty>{empty}</Empty>;
  return <>{children(resource.data)}</>;
}

export function Placeholder({ title }: { title: string }) {
  return (
    <section>
      <h1 class="page-title">{title}</h1>
      <Empty>This page is not built yet.</Empty>
    </section>
  );
}
