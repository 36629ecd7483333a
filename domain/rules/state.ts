import type { RuleDefinition, RuleEvent, RuleMailbox, RuleReplyEvent, RuleRunEvent } from './events.ts';

export interface RuleState extends RuleDefinition {
  ruleId: string;
  mailbox: RuleMailbox;
  createdAt: string;
}

export interface RulesState {
  rules: ReadonlyMap<string, RuleState>;
}

export const rulesAggregate = {
  initialState: { rules: new Map() } as RulesState,
  evolve(state: RulesState, event: RuleEvent): RulesState {
    const rules = new Map(state.rules);
    switch (event.type) {
      case 'RuleCreated': {
        const { ruleId, mailbox, createdAt, ...definition } = event.data;
        rules.set(ruleId, { ...definition, ruleId, mailbox, createdAt });
        break;
      }
      case 'RuleUpdated': {
        const { ruleId, updatedAt: _, ...definition } = event.data;
        const current = rules.get(ruleId);
        if (current) rules.set(ruleId, { ...current, ...definition });
        break;
      }
      case 'RuleDeleted':
        rules.delete(event.data.ruleId);
        break;
      case 'RulesReordered':
        event.data.ruleIds.forEach((id, position) => {
          const current = rules.get(id);
          if (current) rules.set(id, { ...current, position });
        });
        break;
    }
    return { rules };
  },
};

export const ruleRunAggregate = {
  initialState: { recorded: false },
  evolve(_state: { recorded: boolean }, _event: RuleRunEvent) {
    return { recorded: true };
  },
};

/** When the last automatic reply went to one sender from one mailbox. */
export const ruleReplyAggregate = {
  initialState: { lastAt: null } as { lastAt: string | null },
  evolve(_state: { lastAt: string | null }, event: RuleReplyEvent) {
    return { lastAt: event.data.at };
  },
};
