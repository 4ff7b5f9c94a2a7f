// What the server tells the page, in <meta> tags it fills at start-up
// (no inline script: the console's CSP forbids it).

function meta(name: string): string {
  const v = document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
  // An unfilled placeholder (the page opened from the build directory)
  // means "not set".
  return v.startsWith("{{") ? "" : v;
}

export const settings = {
  /** The API's prefix, e.g. /api (restApiRoot). */
  api: meta("notify-api-url-prefix").replace(/\/+$/, "") || "/api",
  /** The OIDC issuer; empty when OIDC sign-in is off. */
  oidcAuthority: meta("notify-oidc-authority").replace(/\/+$/, ""),
  oidcClientId: meta("notify-oidc-client-id"),
};

export function oidcEnabled(): boolean {
  return settings.oidcAuthority !== "" && settings.oidcClientId !== "";
}
