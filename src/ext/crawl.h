/* crawl.c: the crawl (Python type Crawl): one analysis of a module, from
 * the module table built once, through install/uninstall around the
 * forward, to its report. */
#ifndef TSX_CRAWL_H
#define TSX_CRAWL_H

#include "hooks.h"

extern PyType_Spec tsx_crawl_spec;

#endif
