/**
 * Prometheus metrics of one control-plane replica (prom-client, its own Registry so several
 * replicas or test apps in one process never collide). Served on GANTRY_METRICS_PORT, never on
 * the API port. Labels are closed sets only — route templates, HTTP status codes, deployment
 * statuses, bus operations — never a tenant's free text (project names, versions), so the number
 * of series stays bounded however many tenants there are.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What gauges read at scrape time; set by the composition root once the parts exist. */
export interface MetricSources {
  /** Agents with a stream open to this replica. */
  agentsConnected?: () => number;
  /** The heartbeat interval this replica asks of its agents now (ms; it grows with them past the cap). */
  heartbeatIntervalMs?: () => number;
  /** Deployments queued and running now, across the installation (one query per scrape). */
  activeDeployments?: () => Promise<{ queued: number; running: number }>;
}

export type BusOperation = 'publish_work' | 'publish_event' | 'consume';

export interface Metrics {
  readonly registry: Registry;
  readonly sources: MetricSources;
  httpRequest(method: string, route: string, status: number, seconds: number): void;
  deploymentStarted(queueWaitSeconds: number): void;
  deploymentFinished(status: 'Completed' | 'Failed' | 'Cancelled', durationSeconds: number | null): void;
  tasksDispatched(count: number): void;
  logLinesIngested(count: number): void;
  busError(operation: BusOperation): void;
  leaseTakenOver(): void;
}

/** Seconds: from a fast API call (5 ms) to a slow upload (60 s). */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds: deployments last from a second to hours; queue waits from none to hours. */
const DEPLOYMENT_BUCKETS = [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200];

export function createMetrics(options: { processMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  const sources: MetricSources = {};
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'gantry_' });
  const registers = [registry];

  const http = new Histogram({
    name: 'gantry_http_request_duration_seconds',
    help: 'HTTP API requests by method, route template and status code',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers,
  });
  const started = new Counter({
    name: 'gantry_deployments_started_total',
    help: 'Deployments that began running on this replica',
    registers,
  });
  const finished = new Counter({
    name: 'gantry_deployments_finished_total',
    help: 'Deployments that ended on this replica, by final status',
    labelNames: ['status'] as const,
    registers,
  });
  for (const status of ['Completed', 'Failed', 'Cancelled']) finished.inc({ status }, 0);
  const duration = new Histogram({
    name: 'gantry_deployment_duration_seconds',
    help: 'From running to a final status, by final status (cancelled before running: not observed)',
    labelNames: ['status'] as const,
    buckets: DEPLOYMENT_BUCKETS,
    registers,
  });
  const queueWait = new Histogram({
    name: 'gantry_deployment_queue_wait_seconds',
    help: 'From creation (or its scheduled time) to running',
    buckets: DEPLOYMENT_BUCKETS,
    registers,
  });
  new Gauge({
    name: 'gantry_deployments',
    help: 'Deployments queued (incl. validating and awaiting a slot) and running now, installation-wide',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      const active = await sources.activeDeployments?.().catch(() => null);
      if (!active) return;
      this.set({ state: 'queued' }, active.queued);
      this.set({ state: 'running' }, active.running);
    },
  });
  new Gauge({
    name: 'gantry_agents_connected',
    help: 'Agents with a stream open to this replica',
    registers,
    collect() {
      this.set(sources.agentsConnected?.() ?? 0);
    },
  });
  new Gauge({
    name: 'gantry_agent_heartbeat_interval_seconds',
    help: 'How often this replica asks its agents to send Heartbeat now (longer past GANTRY_AGENT_HEARTBEATS_PER_SECOND)',
    registers,
    collect() {
      const intervalMs = sources.heartbeatIntervalMs?.();
      if (intervalMs !== undefined) this.set(intervalMs / 1000);
    },
  });
  const dispatched = new Counter({
    name: 'gantry_tasks_dispatched_total',
    help: 'Tasks sent to agents by this replica',
    registers,
  });
  const logLines = new Counter({
    name: 'gantry_log_lines_ingested_total',
    help: 'Script output lines received from agents and stored by this replica',
    registers,
  });
  const busErrors = new Counter({
    name: 'gantry_bus_errors_total',
    help: 'Bus operations that failed: publish_work, publish_event, consume',
    labelNames: ['operation'] as const,
    registers,
  });
  for (const operation of ['publish_work', 'publish_event', 'consume']) busErrors.inc({ operation }, 0);
  const takeovers = new Counter({
    name: 'gantry_lease_takeovers_total',
    help: 'Deployments this replica took over from a replica whose lease expired (it died or stalled)',
    registers,
  });

  return {
    registry,
    sources,
    httpRequest: (method, route, status, seconds) => http.observe({ method, route, status: String(status) }, seconds),
    deploymentStarted: (seconds) => {
      started.inc();
      queueWait.observe(Math.max(0, seconds));
    },
    deploymentFinished: (status, seconds) => {
      finished.inc({ status });
      if (seconds !== null) duration.observe({ status }, Math.max(0, seconds));
    },
    tasksDispatched: (count) => dispatched.inc(count),
    logLinesIngested: (count) => logLines.inc(count),
    busError: (operation) => busErrors.inc({ operation }),
    leaseTakenOver: () => takeovers.inc(),
  };
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * GET /metrics in the Prometheus text format on a port of its own (no authentication: keep the
 * port on the private network Prometheus scrapes). Anything else is 404.
 */
export async function serveMetrics(metrics: Metrics, port: number, host: string): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(error)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
