// `audit forks`: the full fork audit (SPEC I1) over the whole childrenByParent index. The sweep
// only checks recent rotations; this is the "has it ever happened" question, for operators.
// Exit code 3 when a fork exists, so a script or a CI job can gate on it.
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { parseCommand } from '../args.js';
import type { Command } from '../command.js';
import { EXIT_FORKS_FOUND, EXIT_OK } from '../errors.js';
import { emit } from '../output.js';
import { withTarget } from '../target.js';

const USAGE = 'audit forks [--json] [--stage <s> [--region <r>] [--table <name>]]';

export const auditForks: Command = {
  name: 'audit forks',
  usage: USAGE,
  summary: 'every parent with more than one child (scans the childrenByParent index); exit 3 if any',
  async run(args, io) {
    const { values } = parseCommand(args, { usage: USAGE });
    return withTarget(values, io, async (target) => {
      const { client, tableName } = await target.table();
      const forks = await new DynamoLineageStore({ client, tableName }).findAllForks();
      emit(io, values.json, { tableName, forks }, () =>
        forks.length === 0
          ? [`no forks in ${tableName}: every parent has at most one child`]
          : [
              ...forks.map(
                (f) =>
                  `FORK: parent ${f.parent.sessionId} (tenant ${f.parent.tenantId}) has ${f.childSessionIds.length} children: ${f.childSessionIds.join(', ')}`,
              ),
              `${forks.length} forked parent${forks.length === 1 ? '' : 's'} in ${tableName} (SPEC I1 broken): see README.md "Alarms", forks-found`,
            ],
      );
      return forks.length ? EXIT_FORKS_FOUND : EXIT_OK;
    });
  },
};
