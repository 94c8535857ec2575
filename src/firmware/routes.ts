import type { FastifyInstance } from 'fastify';

export default async function placeholder(_app: FastifyInstance): Promise<void> {}
