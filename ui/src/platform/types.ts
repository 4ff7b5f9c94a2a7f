// The platform API's JSON, as the UI reads it (GET /api/openapi.json
// describes every route).

import type { EventValue } from "../shared/format";

export type Role = "MEMBER" | "ADMIN";

export interface MeGroup {
  id: string;
  name: string;
  role: Role;
}

export interface Me {
  sub: string;
  name: string;
  email: string;
  preferred_username: string;
  roles: Record<string, Role>;
  expires_in: number;
  isSystemAdmin: boolean;
  groups: MeGroup[];
}

export interface Group {
  id: string;
  name: string;
  description: string;
  createdBy: string;
  createdAt: string;
  deletedAt?: string;
  role?: Role;
}

export interface Member {
  userId: string;
  email: string;
  name: string;
  preferred_username: string;
  role: Role;
  since: string;
}

export type RequestStatus = "PENDING" | "APPROVED" | "REJECTED";

export interface MembershipRequest {
  id: string;
  userId: string;
  groupId: string;
  message: string;
  status: RequestStatus;
  createdAt: string;
  decidedBy?: string;
  decidedAt?: string;
}

export interface ApiKeyInfo {
  id: string;
  groupId: string;
  keyPrefix: string;
  createdBy: string;
  createdAt: string;
  lastUsed: string | null;
}

export interface User {
  id: string;
  email: string;
  name: string;
  preferred_username: string;
  isSystemAdmin: boolean;
  createdAt: string;
}

export interface Document {
  id: string;
  groupId: string;
  fileName: string;
  contentType: string;
  size: number;
  sha256: string;
  uploadedBy: string;
  createdAt: string;
  hasOcr: boolean;
}

export interface DocumentPage {
  documents: Document[];
  nextCursor: string | null;
}

export interface OCRResult {
  documentId: string;
  groupId: string;
  engine: string;
  result: Record<string, unknown>;
  writtenBy: string;
  createdAt: string;
  updatedAt: string;
}

export interface Workflow {
  id: string;
  groupId: string;
  name: string;
  description: string;
  latestVersion: number;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
  config?: unknown;
}

export interface WorkflowVersion {
  workflowId: string;
  version: number;
  config: unknown;
  createdBy: string;
  createdAt: string;
}

export type ReviewStatus = "ACTIVE" | "COMPLETED" | "ABANDONED" | "EXPIRED";

export interface Correction {
  id: string;
  field: string;
  originalValue: string;
  value: string;
  createdAt: string;
}

export interface ReviewSession {
  id: string;
  documentId: string;
  groupId: string;
  reviewerId: string;
  status: ReviewStatus;
  createdAt: string;
  expiresAt: string;
  endedAt?: string;
  corrections?: Correction[];
}

export interface AuditEntry {
  id: number;
  event: EventValue;
  action: string;
  actor: string;
  /** The person's name from their profile, when the server knows it. */
  actorName?: string;
  groupId: string;
  outcome: "success" | "failure" | "denied";
  ip: string;
  detail: string;
}

export interface AuditPage {
  entries: AuditEntry[];
  nextBefore: number | null;
}

export interface AuditReport {
  from: string;
  to: string;
  timeZone: string;
  days: { event: EventValue; counts: Record<string, Record<string, number>> }[];
  entries: { id: number; event: EventValue; action: string; actor: string; groupId: string; outcome: string }[];
  truncated: boolean;
}
