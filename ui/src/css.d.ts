// Style sheets are imported for their side effect: esbuild bundles them
// into the build's one CSS file.
declare module "*.css";
