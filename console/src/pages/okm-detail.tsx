import { PageHeader } from '../components/layout.tsx';
import { Empty } from '../components/states.tsx';

// Placeholder until this page is built (issue 12).
export function OkmDetailPage() {
  return (
    <section>
      <PageHeader title="OKM" />
      <Empty>This page is not built yet.</Empty>
    </section>
  );
}
