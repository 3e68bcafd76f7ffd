// The rate-limit tiers (SPEC Limits, first tier table). Every REST route and RPC method names one.
export type Tier = 'exempt' | 'strict' | 'expensive' | 'upload' | 'canvas' | 'write' | 'read' | 'standard'
