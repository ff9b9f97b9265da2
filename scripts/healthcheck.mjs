// The image's HEALTHCHECK (Dockerfile). The image runs either the control plane or an agent: the
// control plane is healthy when GET /readyz answers 200 (PostgreSQL, migrations, bus, gateway);
// an agent (GANTRY_SERVER set) has no HTTP port, so while this runs its process is alive.
if (process.env.GANTRY_SERVER) process.exit(0);
const port = process.env.GANTRY_PORT || '8080';
fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2500) }).then(
  (response) => process.exit(response.ok ? 0 : 1),
  () => process.exit(1),
);
