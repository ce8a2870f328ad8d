// The operator console (operator-guide.md §12): a login form, then one page per
// concern, each reading the controller's admin API every few seconds. Routing is the URL's hash, so
// the controller serves one index.html and nothing about the key ever reaches a URL.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, request, setUnauthorizedHandler, storedKey, storeKey } from './api.js';
import { EscrowsPage } from './pages/escrows.js';
import { HostsPage } from './pages/hosts.js';
import { KeysPage } from './pages/keys.js';
import { OverviewPage } from './pages/overview.js';
import { RotationPage } from './pages/rotation.js';
import { SettingsPage } from './pages/settings.js';
import './styles.css';
import { errorText } from './ui.js';

const PAGES = [
  { id: 'overview', title: 'Overview', page: OverviewPage },
  { id: 'escrows', title: 'Escrows', page: EscrowsPage },
  { id: 'hosts', title: 'Hosts', page: HostsPage },
  { id: 'rotation', title: 'Rotation', page: RotationPage },
  { id: 'keys', title: 'Keys and usage', page: KeysPage },
  { id: 'settings', title: 'Settings', page: SettingsPage },
] as const;

function currentPage(): string {
  const id = location.hash.replace(/^#\/?/, '');
  return PAGES.some((p) => p.id === id) ? id : 'overview';
}

function Login({ onLogin, notice }: { onLogin: () => void; notice: string | null }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(notice);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      // Any admin GET proves the key; nothing is stored until the API accepted it.
      await request('GET', '/v1/admin/settings', undefined, key.trim());
      storeKey(key.trim());
      setKey('');
      onLogin();
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'The admin key was refused.' : errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="login">
      <form onSubmit={submit} autocomplete="off">
        <h1>Gateway console</h1>
        <label>
          Admin key (DEVSHARD_ADMIN_API_KEY)
          <input
            type="password"
            name="admin-key"
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
            autocomplete="off"
            required
          />
        </label>
        <p class="hint">Kept in this tab only (sessionStorage) and sent to the admin API on each call.</p>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy || key.trim() === ''}>
          {busy ? 'Checking…' : 'Log in'}
        </button>
      </form>
    </main>
  );
}

function App() {
  const [loggedIn, setLoggedIn] = useState(storedKey() !== null);
  const [notice, setNotice] = useState<string | null>(null);
  const [page, setPage] = useState(currentPage());
  useEffect(() => {
    const onHash = () => setPage(currentPage());
    window.addEventListener('hashchange', onHash);
    setUnauthorizedHandler(() => {
      storeKey(null);
      setNotice('The admin key is no longer accepted; log in again.');
      setLoggedIn(false);
    });
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  if (!loggedIn) {
    return (
      <Login
        notice={notice}
        onLogin={() => {
          setNotice(null);
          setLoggedIn(true);
        }}
      />
    );
  }
  const current = PAGES.find((p) => p.id === page) ?? PAGES[0];
  const Page = current.page;
  return (
    <div class="shell">
      <nav>
        <div class="brand">Gateway console</div>
        {PAGES.map((p) => (
          <a key={p.id} href={`#/${p.id}`} class={p.id === current.id ? 'active' : ''}>
            {p.title}
          </a>
        ))}
        <button
          type="button"
          class="logout"
          onClick={() => {
            storeKey(null);
            setLoggedIn(false);
          }}
        >
          Log out
        </button>
      </nav>
      <main class="page" data-page={current.id}>
        <h1>{current.title}</h1>
        <Page />
      </main>
    </div>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
