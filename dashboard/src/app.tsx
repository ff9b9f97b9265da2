/**
 * The shell: sign-in gate, header (workspace switcher, pages, account, sign out) and the page the
 * URL names. Which workspace a project or deployment page belongs to comes from that page's data.
 */
import { useEffect, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from './api/client.ts';
import { signOut, useSession } from './api/session.ts';
import { Failure, Loading } from './components/states.tsx';
import { DeploymentPage } from './deployment/deployment-page.tsx';
import { MachinesPage } from './machines/machines-page.tsx';
import { OverviewPage } from './overview/overview-page.tsx';
import { ProjectPage } from './project/project-page.tsx';
import { Link, matchRoute, navigate, paths, useLocation, type Route } from './router.tsx';
import { SignInPage } from './sign-in/sign-in-page.tsx';
import { TopologyPage } from './topology/topology-page.tsx';
import { isSignedOut } from './api/client.ts';

function useWorkspaces(enabled: boolean) {
  return useQuery({
    queryKey: ['workspaces'],
    queryFn: async () => unwrap(await api.GET('/api/workspace')).workspaces,
    enabled,
    staleTime: 60_000,
  });
}

function workspaceOf(route: Route): string | null {
  return 'workspaceId' in route ? route.workspaceId : null;
}

function Header({ route, workspaceId }: { route: Route; workspaceId: string | null }) {
  const session = useSession();
  const workspaces = useWorkspaces(true);
  const [signingOut, setSigningOut] = useState(false);
  const switchTo = (id: string) => {
    const target =
      route.page === 'machines'
        ? paths.machines(id)
        : route.page === 'topology'
          ? paths.topology(id)
          : paths.overview(id);
    navigate(target);
  };
  return (
    <header className="top">
      <Link to="/" className="brand">
        Gantry
      </Link>
      <label className="switcher">
        Workspace
        <select value={workspaceId ?? ''} onChange={(event) => switchTo(event.target.value)}>
          {workspaceId === null && <option value="">Choose…</option>}
          {(workspaces.data ?? []).map((w) => (
            <option key={w.workspaceId} value={w.workspaceId}>
              {w.name}
            </option>
          ))}
        </select>
      </label>
      {workspaceId && (
        <nav aria-label="Pages">
          <Link to={paths.overview(workspaceId)} aria-current={route.page === 'overview' ? 'page' : undefined}>
            Overview
          </Link>
          <Link to={paths.machines(workspaceId)} aria-current={route.page === 'machines' ? 'page' : undefined}>
            Machines
          </Link>
          <Link to={paths.topology(workspaceId)} aria-current={route.page === 'topology' ? 'page' : undefined}>
            Topology
          </Link>
        </nav>
      )}
      <span className="account">
        Signed in as <strong>{session.data?.name}</strong>
      </span>
      <button
        type="button"
        disabled={signingOut}
        onClick={() => {
          setSigningOut(true);
          void signOut()
            .catch(() => undefined)
            .finally(() => navigate('/sign-in', { replace: true }));
        }}
      >
        Sign out
      </button>
    </header>
  );
}

/** `/`: the account's workspace, or the first it can see. */
function Home() {
  const session = useSession();
  const workspaces = useWorkspaces(session.isSuccess);
  useEffect(() => {
    const id = session.data?.workspaceId ?? workspaces.data?.[0]?.workspaceId;
    if (id) navigate(paths.overview(id), { replace: true });
  }, [session.data, workspaces.data]);
  if (workspaces.error) return <Failure error={workspaces.error} />;
  return <Loading what="workspaces" />;
}

function Page({ route, onWorkspace }: { route: Route; onWorkspace: (id: string) => void }) {
  switch (route.page) {
    case 'home':
      return <Home />;
    case 'overview':
      return <OverviewPage workspaceId={route.workspaceId} />;
    case 'machines':
      return <MachinesPage workspaceId={route.workspaceId} />;
    case 'topology':
      return <TopologyPage workspaceId={route.workspaceId} />;
    case 'project':
      return <ProjectPage projectId={route.projectId} onWorkspace={onWorkspace} />;
    case 'deployment':
      return <DeploymentPage deploymentId={route.deploymentId} onWorkspace={onWorkspace} />;
    case 'sign-in':
    case 'not-found':
      return (
        <p className="error">
          No such page. <Link to="/">Go to your workspace</Link>
        </p>
      );
  }
}

export function App() {
  const location = useLocation();
  const route = matchRoute(location.pathname);
  const session = useSession();
  const [pageWorkspace, setPageWorkspace] = useState<string | null>(null);
  useEffect(() => {
    if (route.page !== 'sign-in' && session.error && isSignedOut(session.error)) {
      const next = location.pathname + location.search + location.hash;
      navigate(`/sign-in?next=${encodeURIComponent(next)}`, { replace: true });
    }
  }, [route.page, session.error, location]);
  if (route.page === 'sign-in') return <SignInPage next={location.searchParams.get('next')} />;
  if (session.isPending) return <Loading what="your session" />;
  if (session.error) return isSignedOut(session.error) ? <Loading what="sign-in" /> : <Failure error={session.error} />;
  const workspaceId =
    workspaceOf(route) ?? (route.page === 'project' || route.page === 'deployment' ? pageWorkspace : null);
  return (
    <>
      <Header route={route} workspaceId={workspaceId} />
      <main>
        <Page route={route} onWorkspace={setPageWorkspace} />
      </main>
    </>
  );
}
