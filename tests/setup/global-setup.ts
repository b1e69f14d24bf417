// Placeholder until the real test stack lands (PostgreSQL cluster, dockerd, fauxqs).
export default function setup(): void {}
