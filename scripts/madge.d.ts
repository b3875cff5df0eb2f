/** The part of madge 8's API (no bundled types) that the folder-graph check uses. */
declare module 'madge' {
  interface MadgeConfig {
    baseDir?: string;
    fileExtensions?: string[];
    tsConfig?: string;
    detectiveOptions?: Record<string, { skipTypeImports?: boolean }>;
  }
  interface MadgeResult {
    /** Each file and the files it imports, relative to baseDir. */
    obj(): Record<string, string[]>;
    /** Files madge found imported but could not resolve or read. */
    warnings(): { skipped: string[] };
  }
  function madge(paths: string | string[], config?: MadgeConfig): Promise<MadgeResult>;
  export default madge;
}
