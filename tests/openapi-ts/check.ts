// SPDX-License-Identifier: MIT
// roost.js's declarations (sdk/js/roost.d.ts) against doc/openapi.json where they overlap:
// compiled by check.mjs next to ./openapi (what openapi-typescript generates from the document)
// and ./roost (a copy of roost.d.ts). Each pair below fails to compile when they disagree; the
// error names the fields (Type '{ ...; missing_in_declaration: "status"; ... }' does not satisfy
// the constraint 'Agree').
//
// What agreeing means, for each pair:
//  - every field roost.d.ts names is in the document, required or optional as the document says;
//  - every field the document requires is named by roost.d.ts (its index signature covers the
//    optional rest);
//  - answers (what roostd sends): each field's document type fits the declared one, so every
//    real answer type-checks; requests (what a caller sends): each declared field type fits the
//    document's, so nothing the declaration allows is refused.
import type { components, paths } from './openapi';
import type {
  ClaimResult,
  ErrorBody,
  InboxEvent,
  InboxPage,
  PublishEvent,
  PublishResult,
  RoostEvent,
} from './roost';

type Schemas = components['schemas'];
type Json<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type Inbox = paths['/api/v1/agents/{agent}/inbox']['get']['responses'];
type Claim = paths['/api/v1/agents/{agent}/inbox/claim']['post']['responses'];
type Publish = paths['/api/v1/events']['post'];

// The named fields of T (an index signature aside).
type Known<T> = {
  [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K];
};
type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];
type Def<T> = Exclude<T, undefined>;
type Common<D, S> = keyof Known<D> & keyof Known<S>;

// S is the document's type; its index signature (additionalProperties) aside too.
type Report<D, S0, Dir extends 'answer' | 'request', S = Known<S0>> = {
  not_in_document: Exclude<keyof Known<D>, keyof S>;
  missing_in_declaration: Exclude<RequiredKeys<S>, keyof Known<D>>;
  optional_in_one_only: {
    [K in Common<D, S>]: [K] extends [RequiredKeys<Known<D>>]
      ? [K] extends [RequiredKeys<S>] ? never : K
      : [K] extends [RequiredKeys<S>] ? K : never;
  }[Common<D, S>];
  type_differs: {
    [K in Common<D, S>]: Dir extends 'answer'
      ? [Def<S[K]>] extends [Def<Known<D>[K]>] ? never : K
      : [Def<Known<D>[K]>] extends [Def<S[K]>] ? never : K;
  }[Common<D, S>];
};
type Agree = {
  not_in_document: never;
  missing_in_declaration: never;
  optional_in_one_only: never;
  type_differs: never;
};
type Check<R extends Agree> = R;

// Answers.
export type InboxEventAgrees = Check<Report<InboxEvent<unknown>, Schemas['Event'], 'answer'>>;
export type ClaimedEventAgrees = Check<Report<RoostEvent<unknown>, Schemas['ClaimedEvent'], 'answer'>>;
export type InboxPageAgrees = Check<Report<InboxPage<unknown>, Json<Inbox[200]>, 'answer'>>;
export type ClaimResultAgrees = Check<Report<ClaimResult<unknown>, Json<Claim[200]>, 'answer'>>;
export type PublishResultAgrees = Check<Report<PublishResult, Json<Publish['responses'][201]>, 'answer'>>;
export type ErrorBodyAgrees = Check<Report<ErrorBody, Schemas['Error'], 'answer'>>;
export type ErrorFieldsAgree = Check<Report<ErrorBody['error'], Schemas['Error']['error'], 'answer'>>;
// The events of the two pages, as a whole (their fields are compared above).
export const inboxEvents = (p: Json<Inbox[200]>): InboxPage<unknown>['events'] => p.events;
export const claimedEvents = (p: Json<Claim[200]>): ClaimResult<unknown>['events'] => p.events;
export const published = (p: Json<Publish['responses'][201]>): PublishResult => p;
export const errorBody = (e: Schemas['Error']): ErrorBody => e;

// Requests.
export type PublishEventAgrees = Check<Report<PublishEvent, Schemas['PublishEvent'], 'request'>>;
export const publishOne = (e: Known<PublishEvent>): Schemas['PublishEvent'] => e;
export const publishBatch = (events: Known<PublishEvent>[]): Schemas['PublishBatch'] => ({ events });
