/*-------------------------------------------------------------------------
 * mv_init.c
 *	  Start-up of the mv subsystem (incremental materialized views): hooks,
 *	  and the cheap checks every hook makes first (is the extension
 *	  installed in this database, where is its schema).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "commands/extension.h"
#include "utils/lsyscache.h"

#include "mvinc.h"
#include "mv/mv.h"

/* Oid of schema mvinc, or InvalidOid (a syscache lookup) */
Oid
MvincSchemaOid(void)
{
	return get_namespace_oid("mvinc", true);
}

/*
 * True when mvinc is installed in this database with the mv catalog in
 * place (false while its install script runs).
 */
bool
MvincExtensionReady(void)
{
	Oid			schema;

	if (creating_extension)
		return false;
	schema = MvincSchemaOid();
	if (!OidIsValid(schema) || !OidIsValid(get_relname_relid("mv_view", schema)))
		return false;
	return OidIsValid(get_extension_oid("mvinc", true));
}

/* Install the mv subsystem's GUCs and hooks */
void
MvincMvInit(void)
{
	MvUtilityInit();
	MvReadInit();
}
