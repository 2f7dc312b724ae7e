from kgit.cli import main

raise SystemExit(main())
