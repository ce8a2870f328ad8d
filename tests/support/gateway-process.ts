// Cross-process tests start gateway processes exactly as ./start does.

export {
  REPO_ROOT,
  startTsProcess as startProcess,
  type TsProcess as RunningProcess,
  waitForHttp,
} from '@gonka-gateway/deploy';
export { freePort } from '@gonka-gateway/shared/testing';
