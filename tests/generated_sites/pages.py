"""The pages of the Tsumiki documentation, in reading (navigation) order.

Two pages share a file name in different folders (guide/setup, reference/setup), and three folders
have their own index page (guide/, reference/, reference/cli/) besides the site's home page.
"""

from __future__ import annotations

from .content import Admonition as Box
from .content import BulletList, Code, DefinitionList, Heading, Page, Paragraph, Table


def H2(text):
    return Heading(2, text)


def H3(text):
    return Heading(3, text)


P = Paragraph

HOME = Page("index", "Tsumiki とは", (
    P("Tsumiki は、プロジェクトのビルドやテストなどの作業を「タスク」として定義し、依存関係に沿って順番に実行する"
      "コマンドラインツールです。設定は `tsumiki.toml` という一つのファイルに書きます。"),
    H2("主な特徴"),
    BulletList((
        "依存関係を自動で解決し、必要なタスクだけを実行します。",
        "前回の実行結果をキャッシュし、入力が変わっていないタスクは省略します。",
        "互いに関係のない複数のタスクを同時に走らせることができます。",
        "Linux、macOS、Windows で同じ設定ファイルがそのまま使えます。",
    )),
    H2("ドキュメントの構成"),
    P("はじめて使う方は、ガイドにあるインストールの章から読み進めてください。コマンドの細かな指定方法や"
      "設定項目の一覧は、リファレンスにまとめています。"),
    Box("note", None, "このドキュメントは Tsumiki 1.4 系を対象にしています。1.3 以前では一部のオプションが使えません。"),
))

GUIDE = Page("guide/index", "ガイド", (
    P("ガイドでは、Tsumiki を導入してから日常的に使いこなすまでの流れを、手を動かしながら順に説明します。"),
    H2("読み進める順番"),
    P("まず環境を整え、簡単なタスクを一つ書いて動かします。そのあと依存関係とキャッシュを理解すると、"
      "大きなプロジェクトでも迷わず設定できるようになります。並列実行と環境変数の扱いは、必要になったときに読めば十分です。"),
    H2("前提とする知識"),
    P("ターミナルでコマンドを実行できること、TOML 形式のファイルを編集できることを前提としています。"
      "TOML を知らない場合でも、例をまねれば書けるように説明しています。"),
))

GUIDE_SETUP = Page("guide/setup", "インストールと初期設定", (
    P("この章では Tsumiki をパソコンに入れ、プロジェクトで使える状態にするまでを説明します。"),
    H2("動作環境"),
    P("Tsumiki が動作を確認している環境は次の表のとおりです。"),
    Table("対応している OS とアーキテクチャ", ("OS", "最低バージョン", "アーキテクチャ"), (
        ("Linux", "カーネル 4.19 以降", "x86_64 / arm64"),
        ("macOS", "12 Monterey 以降", "x86_64 / arm64"),
        ("Windows", "10 (22H2) 以降", "x86_64"),
    )),
    H2("インストール"),
    H3("パッケージマネージャーを使う"),
    P("多くの環境では、パッケージマネージャーから入れるのが最も簡単です。macOS では Homebrew、Windows では winget を使います。"),
    Code("console", "brew install tsumiki\nwinget install Tsumiki.Tsumiki"),
    H3("ソースコードからビルドする"),
    P("最新の開発版を試したい場合は、ソースコードを取得して自分でビルドします。ビルドには Rust 1.75 以降が必要です。"),
    Code("console", "git clone https://example.com/tsumiki/tsumiki.git\ncd tsumiki\ncargo install --path ."),
    H2("初期設定"),
    P("プロジェクトのルートディレクトリで `tsumiki init` を実行すると、ひな形の `tsumiki.toml` が作られます。"
      "既にファイルがある場合は上書きせずに終了します。"),
    Box("tip", "インストールできたか確かめるには",
        "`tsumiki --version` を実行してバージョン番号が表示されれば、正しくインストールされています。"
        "表示されない場合は、インストール先のディレクトリが PATH に含まれているか確認してください。"),
))

FIRST_TASK = Page("guide/first-task", "最初のタスクを書く", (
    P("ここでは、テストを実行するだけの小さなタスクを書いて、Tsumiki の基本的な使い方を体験します。"),
    H2("タスクを定義する"),
    P("タスクは `tsumiki.toml` の `[tasks.名前]` という表に書きます。`run` には実行するシェルコマンドを指定します。"),
    Code("toml", '[tasks.test]\ndescription = "単体テストを実行する"\nrun = "pytest -q"\n'
                 'inputs = ["src/**/*.py", "tests/**/*.py"]'),
    H2("タスクを実行する"),
    P("定義したタスクは `tsumiki run test` のように名前を指定して実行します。名前を省略すると、"
      "設定ファイルの `default` に書いたタスクが実行されます。"),
    Box("note", None, "タスク名に使えるのは英小文字、数字、ハイフンだけです。大文字や空白を含む名前を書くと、"
                      "設定の読み込み時にエラーになります。"),
    H2("定義済みのタスクを確かめる"),
    P("`tsumiki list` を実行すると、定義済みのタスクが説明文とともに表示されます。説明文は `description` に書いた内容です。"),
))

DEPENDENCIES = Page("guide/dependencies", "タスクの依存関係", (
    P("実際のプロジェクトでは「ビルドしてからテストする」のように、タスクの間に順序があります。"
      "Tsumiki ではこの順序を依存関係として書きます。"),
    H2("依存するタスクを指定する"),
    P("`needs` に他のタスクの名前を並べると、そのタスクが先に実行されます。例えば次の設定では、"
      "`test` を実行すると必ず先に `build` が走ります。"),
    Code("toml", '[tasks.build]\nrun = "make"\n\n[tasks.test]\nneeds = ["build"]\nrun = "make check"'),
    H2("実行順の決まり方"),
    P("Tsumiki は依存関係をたどってグラフを作り、依存先から順に実行します。互いに依存していないタスク同士の順番は"
      "決まっておらず、並列実行を有効にすると同時に動くことがあります。"),
    H2("循環した依存"),
    P("タスク A が B に依存し、B が A に依存するような輪ができると、どこから始めればよいか決められません。"),
    Box("warning", "循環依存はエラーになります",
        "依存関係に輪があると、Tsumiki は何も実行せずに終了し、輪を作っているタスクの名前を表示します。"
        "表示された順番どおりにたどって、どこか一か所の `needs` を外してください。"),
))

CACHE = Page("guide/cache", "キャッシュと差分実行", (
    P("毎回すべてのタスクを実行すると時間がかかります。Tsumiki は入力が変わっていないタスクを自動的に省略します。"),
    H2("省略されるタスクの条件"),
    P("タスクの `inputs` に書いたファイルの内容と、コマンド自体の文字列からハッシュ値を計算し、前回の実行時と同じであれば"
      "実行を省略します。`inputs` を書いていないタスクは毎回実行されます。"),
    H2("キャッシュの保存場所"),
    P("キャッシュはプロジェクト直下の `.tsumiki/cache` ディレクトリに保存されます。このディレクトリはバージョン管理に含めないでください。"),
    H2("キャッシュを使わずに実行する"),
    P("結果が古いと感じたときは、`tsumiki run --force` で省略せずに実行できます。キャッシュそのものを消したい場合は "
      "`tsumiki clean` を使います。"),
    Box("tip", "CI でキャッシュを共有する",
        "CI サービスのキャッシュ機能で `.tsumiki/cache` を保存しておくと、ジョブをまたいで結果を再利用でき、"
        "ビルド時間を大きく短縮できます。"),
))

PARALLEL = Page("guide/advanced/parallel", "並列実行", (
    P("依存関係のないタスクは同時に実行できます。CPU のコア数が多いマシンほど効果があります。"),
    H2("同時に動かすジョブ数"),
    P("`tsumiki run -j 4` のように `-j` オプションで同時実行数を指定します。指定しない場合は CPU のコア数と同じ数になります。"
      "設定ファイルの `[settings]` 表に `jobs` を書いておくこともできます。"),
    H2("出力の表示"),
    P("並列に動くタスクの出力は、行ごとに先頭にタスク名を付けて表示されます。タスクごとにまとめて見たい場合は "
      "`--output grouped` を指定すると、タスクが終わった時点でまとめて表示されます。"),
    Box("warning", None, "同じファイルに書き込むタスクを並列に実行すると、内容が壊れることがあります。そのようなタスクには "
                         "`exclusive = true` を指定して、他のタスクと同時に動かないようにしてください。"),
))

ENV = Page("guide/advanced/env", "環境変数とシークレット", (
    P("タスクのコマンドに環境変数を渡す方法と、パスワードなどの秘密の値を安全に扱う方法を説明します。"),
    H2("環境変数を設定する"),
    P("タスクの `env` 表に書いた値は、そのタスクのコマンドにだけ環境変数として渡されます。"
      "すべてのタスクに共通の値は `[settings.env]` に書きます。"),
    Code("toml", '[tasks.deploy]\nrun = "./scripts/deploy.sh"\nenv = { TARGET = "staging" }'),
    H2(".env ファイルを読み込む"),
    P("`env_file = \".env\"` を指定すると、そのファイルの `名前=値` の行が環境変数として読み込まれます。"
      "同じ名前がタスクの `env` にもある場合は、タスクの `env` が優先されます。"),
    H2("シークレットを扱う"),
    P("API キーのような値は `secret = [\"API_KEY\"]` のように名前を指定しておくと、ログに出力されるときに伏せ字に置き換えられます。"),
    Box("warning", "シークレットを設定ファイルに直接書かない",
        "`tsumiki.toml` はリポジトリで共有されるため、秘密の値をそのまま書くと漏れてしまいます。"
        "値は `.env` ファイルか CI の環境変数に置いてください。"),
))

REFERENCE = Page("reference/index", "リファレンス", (
    P("リファレンスでは、コマンドと設定ファイルの仕様を網羅的に説明します。使い方の流れを知りたい場合はガイドを読んでください。"),
    H2("表記のきまり"),
    P("コマンドの書式では、角かっこ `[ ]` で囲んだ部分は省略できることを、山かっこ `< >` で囲んだ部分は"
      "実際の値に置き換えることを表します。"),
    H2("バージョンの対応"),
    P("各項目には、使えるようになったバージョンを記載しています。記載のない項目は 1.0 から使えます。"),
))

REFERENCE_SETUP = Page("reference/setup", "setup 表の設定項目", (
    P("`tsumiki.toml` の `[setup]` 表には、タスクを実行する前に一度だけ行う準備を書きます。"
      "ツールのダウンロードや依存パッケージの導入に使います。"),
    H2("設定項目"),
    P("`[setup]` 表に書ける項目は次のとおりです。"),
    DefinitionList((
        ("commands", "準備として順に実行するコマンドの配列です。どれか一つでも失敗すると、タスクは実行されません。"),
        ("once", "`true` にすると、準備が成功したことを記録し、次回からは省略します。既定値は `true` です。"),
        ("timeout", "準備全体にかけてよい時間を秒で指定します。超えた場合は中断してエラーにします。既定値は 600 秒です。"),
        ("when", "準備を行う条件です。`always`、`missing`、`never` のいずれかを指定します。"),
    )),
    H2("when に指定できる値"),
    P("`when` に指定できる値と、その意味を次の表にまとめます。"),
    Table("when に指定できる値", ("値", "準備を行うタイミング"), (
        ("always", "毎回タスクの前に行う"),
        ("missing", ".tsumiki/setup-done がないときだけ行う"),
        ("never", "行わない"),
    )),
    Box("note", None, "`[setup]` 表は 1.2 から使えます。1.1 以前の `before` 項目は廃止されました。"),
))

CLI = Page("reference/cli/index", "コマンド一覧", (
    P("`tsumiki` コマンドはサブコマンドを取ります。次の表は、すべてのサブコマンドとその役割の一覧です。"),
    Table("サブコマンドの一覧", ("サブコマンド", "役割"), (
        ("init", "ひな形の設定ファイルを作る"),
        ("run", "タスクを実行する"),
        ("list", "タスクの一覧を表示する"),
        ("clean", "キャッシュを削除する"),
        ("graph", "依存関係を図として出力する"),
    )),
    H2("共通のオプション"),
    P("どのサブコマンドにも、`--config <ファイル>` で設定ファイルの場所を、`--quiet` で出力の抑制を指定できます。"),
))

CLI_RUN = Page("reference/cli/run", "tsumiki run", (
    P("`tsumiki run` は、指定したタスクとその依存先を実行します。"),
    H2("書式"),
    Code("console", "tsumiki run [オプション] [タスク名...]"),
    H2("オプション"),
    P("`tsumiki run` が受け付けるオプションは次の表のとおりです。"),
    Table("run のオプション", ("オプション", "意味", "既定値"), (
        ("-j, --jobs <数>", "同時に実行するタスクの数", "CPU のコア数"),
        ("--force", "キャッシュを無視してすべて実行する", "なし"),
        ("--dry-run", "実行せずに、実行される予定のタスクを表示する", "なし"),
        ("--output <形式>", "出力の表示方法。prefixed または grouped", "prefixed"),
        ("--keep-going", "失敗したタスクがあっても、関係のないタスクは続けて実行する", "なし"),
    )),
    H2("終了コード"),
    P("`tsumiki run` の終了コードは次の意味を持ちます。スクリプトから呼び出す場合に利用してください。"),
    Table("終了コード", ("コード", "意味"), (
        ("0", "すべてのタスクが成功した"),
        ("1", "失敗したタスクがある"),
        ("2", "設定ファイルに誤りがある"),
        ("3", "依存関係に循環がある"),
    )),
))

CLI_CLEAN = Page("reference/cli/clean", "tsumiki clean", (
    P("`tsumiki clean` は、保存されたキャッシュを削除します。"),
    H2("書式"),
    Code("console", "tsumiki clean [--all] [タスク名...]"),
    H2("削除の範囲"),
    P("タスク名を指定すると、そのタスクのキャッシュだけを削除します。何も指定しない場合はすべてのタスクのキャッシュを削除します。"
      "`--all` を付けると、`[setup]` の完了記録も合わせて削除するため、次回の実行時に準備がやり直されます。"),
    Box("tip", None, "何が消えるかを削除の前に確かめたい場合は、`--dry-run` を付けて実行してください。"),
))

GLOSSARY = Page("reference/glossary", "用語集", (
    P("このドキュメントで使う用語の意味をまとめます。"),
    DefinitionList((
        ("タスク", "名前を付けて登録した一つの作業。シェルコマンドと、その入力や依存先からなります。"),
        ("依存先", "あるタスクより前に実行しておく必要がある別のタスク。`needs` で指定します。"),
        ("入力", "タスクの結果に影響するファイル。内容が変わったときだけタスクが再実行されます。"),
        ("キャッシュ", "前回の実行結果を再利用するために保存した記録。"),
        ("ジョブ", "並列実行で同時に動く、一つひとつの処理の単位。"),
    )),
))

FAQ = Page("faq", "よくある質問", (
    P("利用者からよく寄せられる質問と、その回答をまとめました。"),
    H2("インストールと動作"),
    H3("コマンドが見つからないと表示される"),
    P("インストール先のディレクトリが PATH に含まれていない可能性があります。Homebrew の場合は `brew --prefix` で"
      "表示される場所の `bin` を PATH に追加してください。"),
    H3("古いバージョンから更新するには"),
    P("パッケージマネージャーで入れた場合は、そのパッケージマネージャーの更新コマンドを使います。"
      "1.3 から 1.4 への更新では設定ファイルの書き換えは不要です。"),
    H2("タスクの実行"),
    H3("タスクが毎回実行されてしまう"),
    P("`inputs` を指定していないか、指定したパターンがファイルに一致していない可能性があります。"
      "`tsumiki run --dry-run -v` を実行すると、各タスクを実行する理由が表示されます。"),
    H3("Windows でコマンドが失敗する"),
    P("`run` のコマンドは、Windows では PowerShell で実行されます。`&&` でつないだコマンドは PowerShell 7 以降でなければ"
      "動きません。`shell = \"cmd\"` を指定するとコマンドプロンプトで実行できます。"),
))

PAGES: tuple[Page, ...] = (HOME, GUIDE, GUIDE_SETUP, FIRST_TASK, DEPENDENCIES, CACHE, PARALLEL, ENV,
                           REFERENCE, REFERENCE_SETUP, CLI, CLI_RUN, CLI_CLEAN, GLOSSARY, FAQ)
BY_PATH = {page.path: page for page in PAGES}


def parent(page: Page) -> Page | None:
    """The index page a page is filed under: its folder's index, else the nearest ancestor folder's
    (guide/advanced/ has none, so its pages are under guide/index); the home page has none."""
    if page.path == "index":
        return None
    folder = page.folder if page.name != "index" else page.folder.rpartition("/")[0]
    while folder:
        if f"{folder}/index" in BY_PATH:
            return BY_PATH[f"{folder}/index"]
        folder = folder.rpartition("/")[0]
    return HOME


def children(page: Page) -> list[Page]:
    """The pages filed under `page`, in reading order."""
    return [p for p in PAGES if parent(p) is page]
