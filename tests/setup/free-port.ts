// One implementation for the tests and the split deployment script (infra/split/).
export { freePort } from "../../infra/split/free-port.ts";
