"""The kubelet's configuration: its flags, the ``--config`` KubeletConfiguration file and
its ``--config-dir`` drop-ins, where each value came from, and every check of them, in one
package.

``parse_flags`` (``flags``) parses the command line, merges the file's values under it
(flags win, as upstream), checks the result as upstream's ValidateKubeletFlags and
ValidateKubeletConfiguration do (every rule broken reported together, each naming the flag,
or the file and field, that set the value) and returns one frozen, typed ``KubeletFlags``.
That object is all the daemon's wiring (actors.app.daemon, main, runonce, the drills and the
test bed) reads; nothing here imports the wiring (setup.cfg's import-linter contract
"actors.app.config ... imports nothing of the app's wiring" holds it).

- ``flags``: ``KubeletFlags``, the parser (``build_parser``: the general flags, and the
  subjects' ``add_*_flags`` in --help's order), ``parse_flags`` and the checks
  (``_checked``, which calls the subjects' checks).
- ``kubelet_config``: decoding a KubeletConfiguration document strictly, as upstream;
  ``FIELDS`` maps each implemented field to its flag destination and converter
  (``field_types`` has the converters); ``not_implemented`` lists the rest of upstream's
  fields with the values accepted (upstream's defaults); ``config_dir`` reads the
  ``--config-dir`` drop-ins and merges them over the file as upstream does.
- ``origins``: where a merged value came from, put in front of a check's error.
- ``pflag``: upstream's flag habits on argparse, for every flag: ``GoBool`` (``--flag``,
  ``--flag=false``), pflag's error words (as upstream's kubelet prints them), and the help
  formatter that prints each default as pflag does and never wraps inside a word;
  ``pflag_values`` has pflag's value types (``INT32``, ``DURATION``, ``IP``, ``STRINGS``,
  ``MAP_STRING_STRING``, klog's ``LEVEL``, ...), the only ``type=`` a flag takes;
  ``verbosity`` maps klog's numbers onto the log levels.
- ``cluster_mode``, ``serving``, ``pod_settings``, ``network``, ``container_logs``,
  ``logs_and_trace``, ``eviction``, ``gc``, ``reserved``, ``shutdown``, ``tls``,
  ``feature_gates``: the flags (or KubeletConfiguration fields) of one subject each, with
  their parsers and checks (``upstream_gates``: every upstream feature gate, as data);
  ``durations`` and ``gostrconv`` read Go's durations, booleans and numbers.
- ``configz``: the merged settings rendered back as a KubeletConfiguration (``/configz``).
- ``reference``: docs/configuration.md, generated from the parser.

Adding a flag touches this package, the wiring that uses it and a test:

1. the flag in its subject's ``add_*_flags`` (``build_parser`` itself holds only the
   general ones; a new subject gets a module and an ``add_*_flags`` that ``build_parser``
   calls where its flags are to appear in --help): its value's pflag type as upstream
   declares it (``type=INT32``, ``DURATION``, ...; none for a string), a boolean with
   ``action=GoBool``, its help saying what it does (the formatter adds its default; a
   help says a default itself only when it depends on other flags, with
   ``default=None``); its KubeletConfiguration field, if upstream has one, in
   ``kubelet_config.FIELDS`` (and ``configz`` when /configz should show it);
   tests/unit/app/test_flag_habits.py checks the habits of every flag;
2. its typed field in ``KubeletFlags``, set (and checked, in upstream's words, through
   ``Problems``) in ``flags._checked``, the check written in the subject's module;
3. the wiring reads ``flags.<field>``;
4. a test of the check, and ``python -m actors.app.config.reference > docs/configuration.md``
   (tests/unit/app/test_configuration_reference.py fails until the reference is current).
"""
