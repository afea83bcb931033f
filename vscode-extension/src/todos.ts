// The todo board: a native tree view fed by tiller/todos (and tiller/getTodos after a start).
import * as vscode from "vscode";
import type { State, Todo, TodoStatus } from "./protocol";
import type { TillerServer } from "./server";

export const TODOS_VIEW_ID = "tiller.todos";

const ICONS: Record<TodoStatus, vscode.ThemeIcon> = {
  pending: new vscode.ThemeIcon("circle-large-outline"),
  in_progress: new vscode.ThemeIcon("sync~spin", new vscode.ThemeColor("charts.blue")),
  completed: new vscode.ThemeIcon("pass-filled", new vscode.ThemeColor("testing.iconPassed")),
};

/** An item left "in progress" while no turn runs (an interrupted turn): no spinner. */
const STALLED_ICON = new vscode.ThemeIcon("circle-large-filled", new vscode.ThemeColor("charts.blue"));
const STALLED_TEXT = "in progress when the turn stopped";

const STATUS_TEXT: Record<TodoStatus, string> = {
  pending: "pending",
  in_progress: "in progress",
  completed: "done",
};

class TodoTree implements vscode.TreeDataProvider<Todo> {
  private todos: Todo[] = [];
  private busy = false;
  private readonly changed = new vscode.EventEmitter<undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  set(todos: Todo[]): void {
    this.todos = todos;
    this.changed.fire(undefined);
  }

  setBusy(busy: boolean): void {
    if (busy !== this.busy) {
      this.busy = busy;
      this.changed.fire(undefined);
    }
  }

  get size(): { done: number; total: number } {
    return { done: this.todos.filter((todo) => todo.status === "completed").length, total: this.todos.length };
  }

  getTreeItem(todo: Todo): vscode.TreeItem {
    const running = todo.status === "in_progress" && this.busy;
    const stalled = todo.status === "in_progress" && !this.busy;
    const label = running && todo.activeForm !== "" ? todo.activeForm : todo.content;
    const status = stalled ? STALLED_TEXT : (STATUS_TEXT[todo.status] ?? todo.status);
    const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
    item.iconPath = stalled ? STALLED_ICON : (ICONS[todo.status] ?? ICONS.pending);
    item.description = status;
    item.tooltip = `${todo.content} — ${status}`;
    item.accessibilityInformation = { label: `${label}, ${status}` };
    return item;
  }

  getChildren(element?: Todo): Todo[] {
    return element === undefined ? this.todos : [];
  }

  dispose(): void {
    this.changed.dispose();
  }
}

export function createTodoBoard(server: TillerServer): vscode.Disposable {
  const tree = new TodoTree();
  const view = vscode.window.createTreeView(TODOS_VIEW_ID, { treeDataProvider: tree });
  const show = (todos: Todo[]): void => {
    tree.set(todos);
    const { done, total } = tree.size;
    view.description = total > 0 ? `${done}/${total}` : undefined;
    view.message = total > 0 ? undefined : "No todos yet. The agent fills this board as it plans its work.";
  };
  show([]);
  const onState = server.onState((state: State) => tree.setBusy(state.busy));
  return vscode.Disposable.from(tree, view, server.onTodos(show), onState);
}
