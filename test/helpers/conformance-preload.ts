import diagnostics from 'node:diagnostics_channel';
import type { FastifyInstance } from 'fastify';
import { checkConformance } from './conformance.ts';

// Loaded with --import into the keyfleet processes the tests start (serve, dispatch): every
// Fastify instance they create checks its answers against its own OpenAPI document, as the
// in-process test apps do, so a test that talks to a real process is held to the contract too.
diagnostics.subscribe('fastify.initialization', (message) => {
  checkConformance((message as { fastify: FastifyInstance }).fastify, { routesAddedLaterAreTests: false });
});
