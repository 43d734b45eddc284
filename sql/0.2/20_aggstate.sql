
-- mvinc install script, part 20: aggregate states (src/mv/aggstate*.c).
-- Any aggregate that supports partial aggregation kept as a mergeable
-- state (bytea), driven by its own pg_aggregate entry; see
-- docs/internals.md, "Aggregate states".

-- Support functions of the aggregates below (not for direct use).
CREATE FUNCTION mvinc._agg_state_trans(internal, regprocedure, VARIADIC "any")
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_trans';
CREATE FUNCTION mvinc._agg_state_trans(internal, regprocedure)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_trans';
CREATE FUNCTION mvinc._agg_merge_trans(internal, regprocedure, bytea)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_merge_trans';
CREATE FUNCTION mvinc._agg_merge_trans(internal, regprocedure, bytea, anyelement)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_merge_trans';
CREATE FUNCTION mvinc._agg_apply_trans(internal, regprocedure, bytea, integer, VARIADIC "any")
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_apply_trans';
CREATE FUNCTION mvinc._agg_apply_trans(internal, regprocedure, bytea, integer)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_apply_trans';
CREATE FUNCTION mvinc._agg_state_final(internal)
    RETURNS bytea LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_final';
CREATE FUNCTION mvinc._agg_state_combine(internal, internal)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_combine';
CREATE FUNCTION mvinc._agg_state_serialize(internal)
    RETURNS bytea LANGUAGE c STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_serialize';
CREATE FUNCTION mvinc._agg_state_deserialize(bytea, internal)
    RETURNS internal LANGUAGE c STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_deserialize';

-- Only the aggregates below call them, and an aggregate's support
-- functions are checked against the aggregate's owner, not the caller.
REVOKE ALL ON FUNCTION
    mvinc._agg_state_trans(internal, regprocedure, VARIADIC "any"),
    mvinc._agg_state_trans(internal, regprocedure),
    mvinc._agg_merge_trans(internal, regprocedure, bytea),
    mvinc._agg_merge_trans(internal, regprocedure, bytea, anyelement),
    mvinc._agg_apply_trans(internal, regprocedure, bytea, integer, VARIADIC "any"),
    mvinc._agg_apply_trans(internal, regprocedure, bytea, integer),
    mvinc._agg_state_final(internal),
    mvinc._agg_state_combine(internal, internal),
    mvinc._agg_state_serialize(internal),
    mvinc._agg_state_deserialize(bytea, internal)
  FROM PUBLIC;

-- The state of aggfn over the rows: mvinc.agg_state('sum(integer)', x).
CREATE AGGREGATE mvinc.agg_state(aggfn regprocedure, VARIADIC "any") (
    SFUNC = mvinc._agg_state_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, COMBINEFUNC = mvinc._agg_state_combine,
    SERIALFUNC = mvinc._agg_state_serialize, DESERIALFUNC = mvinc._agg_state_deserialize,
    PARALLEL = SAFE);
-- The same for aggregates without arguments: mvinc.agg_state('count()').
CREATE AGGREGATE mvinc.agg_state(aggfn regprocedure) (
    SFUNC = mvinc._agg_state_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, COMBINEFUNC = mvinc._agg_state_combine,
    SERIALFUNC = mvinc._agg_state_serialize, DESERIALFUNC = mvinc._agg_state_deserialize,
    PARALLEL = SAFE);

-- States merged with aggfn's combine function.
CREATE AGGREGATE mvinc.agg_merge(aggfn regprocedure, state bytea) (
    SFUNC = mvinc._agg_merge_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, COMBINEFUNC = mvinc._agg_state_combine,
    SERIALFUNC = mvinc._agg_state_serialize, DESERIALFUNC = mvinc._agg_state_deserialize,
    PARALLEL = SAFE);
-- The same, told the aggregate's argument type and collation by a sample
-- value: mvinc.agg_merge('max(text)', s, NULL::text COLLATE "C"), or
-- mvinc.agg_merge('max(anyarray)', s, NULL::int[]) for a polymorphic state.
CREATE AGGREGATE mvinc.agg_merge(aggfn regprocedure, state bytea, sample anyelement) (
    SFUNC = mvinc._agg_merge_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, COMBINEFUNC = mvinc._agg_state_combine,
    SERIALFUNC = mvinc._agg_state_serialize, DESERIALFUNC = mvinc._agg_state_deserialize,
    PARALLEL = SAFE);

-- A base state with rows added (sign > 0) and retracted (sign < 0);
-- NULL when a retraction is refused: recompute the group.
CREATE AGGREGATE mvinc.agg_apply(aggfn regprocedure, base bytea, sign integer, VARIADIC "any") (
    SFUNC = mvinc._agg_apply_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, PARALLEL = SAFE);
CREATE AGGREGATE mvinc.agg_apply(aggfn regprocedure, base bytea, sign integer) (
    SFUNC = mvinc._agg_apply_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, PARALLEL = SAFE);

-- Two states merged (NULL is the empty state).
CREATE FUNCTION mvinc.agg_combine(aggfn regprocedure, a bytea, b bytea)
    RETURNS bytea LANGUAGE c CALLED ON NULL INPUT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_combine';
CREATE FUNCTION mvinc.agg_combine(aggfn regprocedure, a bytea, b bytea, sample anyelement)
    RETURNS bytea LANGUAGE c CALLED ON NULL INPUT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_combine';

-- aggfn's result over a state; the third argument gives the result type.
CREATE FUNCTION mvinc.agg_final(aggfn regprocedure, state bytea, result anyelement)
    RETURNS anyelement LANGUAGE c CALLED ON NULL INPUT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_final';

-- The result over three states combined (NULL is the empty state):
-- agg_final(agg_combine(agg_combine(a, b), c)) in one call, without
-- serializing the combined state; reads merge stored rows with it.  The
-- types come from result, as for agg_final; the optional last argument
-- (agg_combine's sample) gives only its collation.
CREATE FUNCTION mvinc.agg_combine_final(aggfn regprocedure, a bytea, b bytea, c bytea,
                                        result anyelement)
    RETURNS anyelement LANGUAGE c CALLED ON NULL INPUT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_combine_final';
CREATE FUNCTION mvinc.agg_combine_final(aggfn regprocedure, a bytea, b bytea, c bytea,
                                        result anyelement, sample "any")
    RETURNS anyelement LANGUAGE c CALLED ON NULL INPUT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_combine_final';

-- agg_final for the stored results of incremental views (generated
-- columns need an immutable expression): an aggregate's final function
-- gives the same result for the same state, and the aggregate named by an
-- OID does not change.
CREATE FUNCTION mvinc._agg_final_stored(aggfn regprocedure, state bytea, result anyelement)
    RETURNS anyelement LANGUAGE c CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_final';
-- Storage tables' generated columns call it; they are written only by
-- refresh, which runs as the bootstrap superuser.
REVOKE ALL ON FUNCTION mvinc._agg_final_stored(regprocedure, bytea, anyelement) FROM PUBLIC;

-- 'retractable', 'mergeable' or 'unsupported', and why not better.
CREATE FUNCTION mvinc.agg_kind(aggfn regprocedure)
    RETURNS text LANGUAGE c STRICT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_kind';
CREATE FUNCTION mvinc.agg_kind_detail(aggfn regprocedure)
    RETURNS text LANGUAGE c STRICT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_kind_detail';

-- Whether a state of one aggregate is also the state of another (sum and
-- avg of numeric), so that a view can store it once.
CREATE FUNCTION mvinc.agg_same_state(a regprocedure, b regprocedure)
    RETURNS boolean LANGUAGE c STRICT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_same_state';

-- Whether agg_merge/agg_combine need the sample argument for aggfn: its
-- state type is polymorphic or its argument is collatable (min/max(text)).
CREATE FUNCTION mvinc.agg_needs_sample(aggfn regprocedure)
    RETURNS boolean LANGUAGE c STRICT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_needs_sample';

-- approx_count_distinct: a mergeable HyperLogLog (src/mv/hll.c).
CREATE FUNCTION mvinc._hll_trans(internal, anyelement)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_hll_trans';
CREATE FUNCTION mvinc._hll_combine(internal, internal)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_hll_combine';
CREATE FUNCTION mvinc._hll_serialize(internal)
    RETURNS bytea LANGUAGE c STRICT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_hll_serialize';
CREATE FUNCTION mvinc._hll_deserialize(bytea, internal)
    RETURNS internal LANGUAGE c STRICT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_hll_deserialize';
CREATE FUNCTION mvinc._hll_final(internal)
    RETURNS bigint LANGUAGE c CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_hll_final';

REVOKE ALL ON FUNCTION
    mvinc._hll_trans(internal, anyelement),
    mvinc._hll_combine(internal, internal),
    mvinc._hll_serialize(internal),
    mvinc._hll_deserialize(bytea, internal),
    mvinc._hll_final(internal)
  FROM PUBLIC;

-- The approximate number of distinct non-NULL values (about 1.6 % error).
CREATE AGGREGATE mvinc.approx_count_distinct(anyelement) (
    SFUNC = mvinc._hll_trans, STYPE = internal, SSPACE = 4200,
    FINALFUNC = mvinc._hll_final,
    COMBINEFUNC = mvinc._hll_combine,
    SERIALFUNC = mvinc._hll_serialize, DESERIALFUNC = mvinc._hll_deserialize,
    PARALLEL = SAFE);
