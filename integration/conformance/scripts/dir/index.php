<?php
// The same report from a directory index: SCRIPT_NAME and friends differ.
require __DIR__ . "/../server.php";
