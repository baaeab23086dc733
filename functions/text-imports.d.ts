// Files esbuild inlines as strings (`import x from '...' with { type: 'text' }`): functions/docs.ts.
declare module 'swagger-ui-dist/swagger-ui-bundle.js' {
  const text: string;
  export default text;
}
declare module 'swagger-ui-dist/swagger-ui.css' {
  const text: string;
  export default text;
}
