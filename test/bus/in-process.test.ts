import t from 'tap';
import { InProcessWorkQueue } from '../../infra/bus/in-process.ts';
import { workQueueContract } from './contract.ts';

// Nothing is ever redelivered without a retry or a throw, so "delivered once" need not wait long.
workQueueContract(t, { open: async () => new InProcessWorkQueue(), redeliveryWindowMs: 0 });
