/** A filter box whose text goes to the server (in the URL's `search`), debounced. */
import { useEffect, useState } from 'react';
import { setSearchParams } from '../router.tsx';

export function SearchBox({ label, value }: { label: string; value: string }) {
  const [text, setText] = useState(value);
  useEffect(() => setText(value), [value]);
  useEffect(() => {
    if (text === value) return undefined;
    const timer = setTimeout(() => setSearchParams({ search: text, skip: undefined }), 250);
    return () => clearTimeout(timer);
  }, [text, value]);
  return (
    <label className="search">
      {label}
      <input type="search" value={text} onChange={(event) => setText(event.target.value)} />
    </label>
  );
}
