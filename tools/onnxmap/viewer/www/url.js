// The page's URLs: query strings (for /api/ and for the hash) and the link targets of the pages.
// Imports nothing.

/** "?a=1&b=x" from an object; null, undefined and "" values are left out. */
export function queryString(params) {
  const parts = [];
  for (const [key, value] of Object.entries(params ?? {})) {
    if (value === undefined || value === null || value === '') continue;
    parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** Link targets of the pages. */
export const href = {
  // `index`: the tensor's row of /api/tensors, where a name may be used by several graphs.
  tensor: (name, index) => `#/tensor/${encodeURIComponent(name)}${index === undefined ? '' : `?index=${index}`}`,
  // `graph`: a subgraph's path (/api/graph's), absent or '' for the main graph.
  node: (id, graph) => `#/node/${encodeURIComponent(id)}${queryString({ graph })}`,
  graphNode: (id, graph) => `#/graph${queryString({ graph, node: id })}`,
  nodes: (q) => `#/nodes${queryString({ q })}`,
};
