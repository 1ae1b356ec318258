#ifndef ATTACHE_FRONT_H
#define ATTACHE_FRONT_H

/// The executable that runs the command line whose first word is `command` (NULL: no word):
/// "attache-transfer" for upload and request, "attache-pipeline" for every other command line, and
/// NULL for the four commands the `attache` front runs itself (detect, recompress, encrypt, decrypt).
/// The one table of which executable runs what; the front's Swift `main` asks it too.
const char *attache_front_target(const char *command);

#endif
