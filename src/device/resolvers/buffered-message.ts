import type { Resolver } from './types.ts';

export const bufferedMessage: Resolver = ({ pendingMessage }) =>
  pendingMessage ? { message: { id: pendingMessage.id, type: pendingMessage.type, payload: pendingMessage.payload } } : undefined;
