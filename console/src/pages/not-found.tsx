import { PageHeader } from '../components/layout.tsx';
import { href } from '../paths.ts';

export function NotFoundPage() {
  return (
    <section>
      <PageHeader title="Page not found" />
      <p>
        The console has no page at this address. <a href={href('/')}>Go to the overview</a>.
      </p>
    </section>
  );
}
