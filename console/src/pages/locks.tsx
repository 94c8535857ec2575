import { Placeholder } from '../components/resource-view.tsx';

// Placeholder until this page is built (issue 12).
export const LocksPage = () => <Placeholder title="Locks" />;
