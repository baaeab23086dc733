// H3: retention settings. The tenant's live at `T#<tenant>#SETTINGS` / `RETENTION` (an operator
// setting: `npm run cli -- tenants set-retention`); a conversation's on its CONV record
// (`archivedSeconds`, `endedSessionSeconds`), set by PUT/PATCH and bounded by the tenant's.
// Reads apply them (history.ts); DynamoDB's TTL only does the deleting, later.
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConversationNotFoundError } from '../errors.js';
import { assertWithinTenant, effectiveRetention, type Retention } from '../history.js';
import { toConversationRecord, conversationKey, type ConversationItem } from './conversation-row.js';
import { EXISTS } from './conditions.js';
import { isConditionFailure } from './retry.js';
import type { Key, Table } from './table.js';
import type { ConversationRecord } from '../types.js';

export function tenantSettingsKey(tenantId: string): Key {
  return { pk: `T#${tenantId}#SETTINGS`, sk: 'RETENTION' };
}

/** The retention fields of a stored item (CONV or tenant settings), as the contract names them. */
export function retentionOf(item: Retention | undefined): Retention {
  const r: Retention = {};
  if (typeof item?.archivedSeconds === 'number') r.archivedSeconds = item.archivedSeconds;
  if (typeof item?.endedSessionSeconds === 'number') r.endedSessionSeconds = item.endedSessionSeconds;
  return r;
}

/** SET what is given, REMOVE what is null. */
function retentionUpdate(r: { [K in keyof Retention]?: number | null }): { update: string; values: Record<string, unknown> } {
  const set: string[] = [];
  const remove: string[] = [];
  const values: Record<string, unknown> = {};
  for (const name of ['archivedSeconds', 'endedSessionSeconds'] as const) {
    const v = r[name];
    if (v === null) remove.push(name);
    else if (v !== undefined) {
      set.push(`${name} = :${name}`);
      values[`:${name}`] = v;
    }
  }
  const update = [set.length ? `SET ${set.join(', ')}` : '', remove.length ? `REMOVE ${remove.join(', ')}` : ''].join(' ').trim();
  return { update, values };
}

export class RetentionSettings {
  constructor(
    private readonly table: Table,
    private readonly defaultArchivedSeconds: number,
  ) {}

  /** What applies to the conversation `conversationId` (undefined: a chain from before conversations). */
  async effective(
    tenantId: string,
    conversationId: string | undefined,
  ): Promise<{ archivedSeconds: number; endedSessionSeconds?: number }> {
    const [tenant, conv] = await Promise.all([
      this.tenant(tenantId),
      conversationId === undefined ? undefined : this.table.getItem<ConversationItem>(conversationKey(tenantId, conversationId)),
    ]);
    return effectiveRetention(retentionOf(conv), tenant, this.defaultArchivedSeconds);
  }

  async tenant(tenantId: string): Promise<Retention> {
    const out = await this.table.send('read tenant settings', () =>
      this.table.doc.send(new GetCommand({ TableName: this.table.name, Key: tenantSettingsKey(tenantId), ConsistentRead: true })),
    );
    return retentionOf(out.Item as Retention | undefined);
  }

  /** Operators: null removes a setting (back to the default). */
  async setTenant(tenantId: string, r: { [K in keyof Retention]?: number | null }): Promise<Retention> {
    const { update, values } = retentionUpdate(r);
    if (!update) return this.tenant(tenantId);
    const out = await this.table.send('write tenant settings', () =>
      this.table.doc.send(
        new UpdateCommand({
          TableName: this.table.name,
          Key: tenantSettingsKey(tenantId),
          UpdateExpression: update,
          ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return retentionOf(out.Attributes as Retention | undefined);
  }

  /** RetentionOverLimitError when `r` asks for more than the tenant's limits allow. */
  async check(tenantId: string, r: Retention): Promise<void> {
    assertWithinTenant(r, await this.tenant(tenantId), this.defaultArchivedSeconds);
  }

  /** The conversation's own setting (validated against the tenant's by the caller); the record as it stands after. */
  async setConversation(tenantId: string, conversationId: string, r: Retention): Promise<ConversationRecord> {
    assertWithinTenant(r, await this.tenant(tenantId), this.defaultArchivedSeconds);
    const { update, values } = retentionUpdate(r);
    try {
      const out = await this.table.send('write conversation retention', () =>
        this.table.doc.send(
          new UpdateCommand({
            TableName: this.table.name,
            Key: conversationKey(tenantId, conversationId),
            UpdateExpression: update,
            ConditionExpression: EXISTS,
            ExpressionAttributeValues: values,
            ReturnValues: 'ALL_NEW',
          }),
        ),
      );
      return toConversationRecord(out.Attributes as ConversationItem);
    } catch (err) {
      if (isConditionFailure(err)) throw new ConversationNotFoundError(conversationId);
      throw err;
    }
  }
}
